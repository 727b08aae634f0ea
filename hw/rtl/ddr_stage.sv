`default_nettype none
// DDR frame stage: a frame buffer in board memory in front of a block that takes no input
// while it computes (conv_offchip with ISLOTS = 1; docs/cost-model.md "DDR frame stage").
// The producer's beats are taken at any time into a write FIFO; frame k is written to region
// k mod REGIONS (BASE + (k mod REGIONS)*REGION_BYTES) through an AXI4 write master, read back
// once complete through an AXI4 read master into an output FIFO the consumer drains.
//   write : a stream beat is one AXI beat (low LANES bytes, the upper bytes zero, full
//           strobes). A frame's bursts are fixed: from beat p, len(p) = min(BURST,
//           FRAME_BEATS - p, beats to the next 4 KB), so every frame has the same NB bursts.
//           A burst's AW is issued once all its beats are in the write FIFO (and, for a frame's
//           first burst, once a region is free: fewer than REGIONS frames started and not
//           fully read back); its W beats follow from the next cycle, one per wready.
//   barrier: a frame is readable once its NB write responses (B) have arrived.
//   read  : frames in order; a burst's AR is issued only while the output FIFO has room for
//           it (beats requested and not yet taken by the consumer, this burst's included, at
//           most ODEPTH), so rready stays high. The frame's last R beat frees its region.
// Cycles (model: bbgrap_hls/model/stage.py, which steps this control cycle by cycle): an
// input beat at cycle c counts for an AW from c+1; a W beat one cycle after its AW at the
// earliest; a B at cycle c (received) makes the frame readable at c+1 (an AR at c+1); an R
// beat at c leaves on m_axis at c+2 at the earliest (fifo.sv's registered read).
// Input tlast is unused (frames are counted); output tlast on a frame's last beat. As a FIFO
// shorter than a frame (a ring in board memory whose frame is written in CHUNKS regions, the
// HLS bb::ddr_fifo's CHUNKS), "frame" above is a region of FRAME_BEATS beats and tlast marks
// the last beat of every CHUNKS-th region: the stream's own frame end.
module ddr_stage #(
    parameter int LANES        = 4,
    parameter int FRAME_BEATS  = 16,
    parameter int DATA_W       = 64,
    parameter int ADDR_W       = 32,
    parameter logic [63:0] BASE = 0,
    parameter int REGION_BYTES = 4096,
    parameter int REGIONS      = 2,
    parameter int BURST        = 64,
    parameter int WDEPTH       = 2 * BURST,        // write FIFO (stream beats)
    parameter int ODEPTH       = 2 * BURST + 128,  // output FIFO: beats requested, not yet taken
    parameter int CHUNKS       = 1                 // regions a stream frame (tlast)
) (
    input  wire                  clk,
    input  wire                  rst,
    input  wire                  s_axis_tvalid,
    output logic                 s_axis_tready,
    input  wire  [LANES*8-1:0]   s_axis_tdata,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire                  s_axis_tlast,  // frames are counted, not marked
    /* verilator lint_on UNUSEDSIGNAL */
    output logic                 m_axis_tvalid,
    input  wire                  m_axis_tready,
    output logic [LANES*8-1:0]   m_axis_tdata,
    output logic                 m_axis_tlast,
    // AXI4 write master
    output logic [ADDR_W-1:0]    m_axi_awaddr,
    output logic [7:0]           m_axi_awlen,
    output logic [2:0]           m_axi_awsize,
    output logic [1:0]           m_axi_awburst,
    output logic                 m_axi_awvalid,
    input  wire                  m_axi_awready,
    output logic [DATA_W-1:0]    m_axi_wdata,
    output logic [DATA_W/8-1:0]  m_axi_wstrb,
    output logic                 m_axi_wlast,
    output logic                 m_axi_wvalid,
    input  wire                  m_axi_wready,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire  [1:0]           m_axi_bresp,   // errors are not handled
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                  m_axi_bvalid,
    output logic                 m_axi_bready,
    // AXI4 read master
    output logic [ADDR_W-1:0]    m_axi_araddr,
    output logic [7:0]           m_axi_arlen,
    output logic [2:0]           m_axi_arsize,
    output logic [1:0]           m_axi_arburst,
    output logic                 m_axi_arvalid,
    input  wire                  m_axi_arready,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire  [DATA_W-1:0]    m_axi_rdata,   // the low LANES bytes are the beat
    input  wire  [1:0]           m_axi_rresp,   // errors are not handled
    input  wire                  m_axi_rlast,   // beats are counted
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                  m_axi_rvalid,
    output logic                 m_axi_rready
);
  localparam int SW = LANES * 8;
  localparam int DB = DATA_W / 8;
  localparam int DBW = $clog2(DB);
  localparam int PAGE = 4096 / DB;                       // beats per 4 KB
  localparam int F = FRAME_BEATS;
  localparam int FW = $clog2(F + 1);
  localparam int LW = $clog2(BURST + 1);
  localparam int RW = $clog2(REGIONS + 1);
  localparam int OW = $clog2(ODEPTH + BURST + 1);
  localparam int CW = $clog2(WDEPTH + 2) + 1;
  localparam int NB = (F / PAGE) * ((PAGE + BURST - 1) / BURST) + ((F % PAGE) + BURST - 1) / BURST;
  localparam int NBW = $clog2(NB + 1);
  localparam logic [ADDR_W-1:0] RBYTES = ADDR_W'(REGION_BYTES);
  localparam logic [ADDR_W-1:0] FIRST = ADDR_W'(BASE);
  localparam logic [ADDR_W-1:0] LASTR = ADDR_W'(BASE + 64'(REGIONS - 1) * 64'(REGION_BYTES));

  initial begin
    if (DATA_W < 32 || (DATA_W & (DATA_W - 1)) != 0 || DATA_W > 1024 || DATA_W < SW)
      $error("ddr_stage: DATA_W=%0d must be a power of two in 32..1024, at least LANES*8", DATA_W);
    if (BASE % 4096 != 0 || REGION_BYTES % 4096 != 0 || REGION_BYTES < F * DB)
      $error("ddr_stage: BASE and REGION_BYTES=%0d must be 4 KB multiples, a region >= a frame", REGION_BYTES);
    if (F < 1 || REGIONS < 1 || BURST < 1 || BURST > 256)
      $error("ddr_stage: FRAME_BEATS=%0d REGIONS=%0d BURST=%0d", F, REGIONS, BURST);
    if (WDEPTH < BURST || ODEPTH < BURST)
      $error("ddr_stage: WDEPTH=%0d and ODEPTH=%0d must hold a burst of %0d", WDEPTH, ODEPTH, BURST);
  end

  // the burst starting at frame beat p: min(BURST, F - p, beats to the next 4 KB)
  function automatic logic [LW-1:0] blen(input logic [FW-1:0] p);
    logic [31:0] a, b;
    a = 32'(F) - 32'(p);
    b = 32'(PAGE) - 32'(p) % 32'(PAGE);
    if (b < a) a = b;
    if (32'(BURST) < a) a = 32'(BURST);
    blen = a[LW-1:0];
  endfunction

  // ---- write FIFO --------------------------------------------------------------------------
  logic wf_valid, wf_ready;
  logic [SW-1:0] wf_data;
  /* verilator lint_off UNUSEDSIGNAL */
  logic wf_last;
  /* verilator lint_on UNUSEDSIGNAL */
  fifo #(.WIDTH(SW), .DEPTH(WDEPTH)) u_wfifo (
      .clk, .rst, .s_axis_tvalid, .s_axis_tready, .s_axis_tdata, .s_axis_tlast(1'b0),
      .m_axis_tvalid(wf_valid), .m_axis_tready(wf_ready), .m_axis_tdata(wf_data), .m_axis_tlast(wf_last));

  // ---- AW: a burst once its beats are buffered -------------------------------------------
  logic [CW-1:0] avail;      // beats in the write FIFO not yet given to an AW
  logic [FW-1:0] apos;       // next AW's first frame beat
  logic [ADDR_W-1:0] abase;  // region of the frame being requested
  logic [RW-1:0] inuse;      // regions holding a frame started and not fully read back
  logic [LW-1:0] alen;
  logic aw_hs, in_hs, r_end;
  assign alen = blen(apos);
  assign in_hs = s_axis_tvalid && s_axis_tready;
  assign m_axi_awvalid = avail >= CW'(alen) && (apos != '0 || inuse < RW'(REGIONS));
  assign m_axi_awaddr = abase + (ADDR_W'(apos) << DBW);
  assign m_axi_awlen = 8'(alen - 1'b1);
  assign m_axi_awsize = 3'(DBW);
  assign m_axi_awburst = 2'b01;  // INCR
  assign aw_hs = m_axi_awvalid && m_axi_awready;

  // ---- W: the committed beats, bursts cut as the AWs were -----------------------------------
  logic [CW-1:0] wcom;       // beats given to an AW, not yet sent
  logic [FW-1:0] wpos;       // frame beat of the next W beat
  logic [LW-1:0] wleft, wlen;  // beats left in the current W burst (0: a new burst)
  logic w_hs;
  assign wlen = wleft != '0 ? wleft : blen(wpos);
  assign m_axi_wvalid = wf_valid && wcom != '0;
  assign wf_ready = m_axi_wready && wcom != '0;
  assign m_axi_wdata = DATA_W'(wf_data);
  assign m_axi_wstrb = '1;
  assign m_axi_wlast = wlen == LW'(1);
  assign w_hs = m_axi_wvalid && m_axi_wready;

  always_ff @(posedge clk) begin
    if (rst) begin
      avail <= '0;
      apos <= '0;
      abase <= FIRST;
      wcom <= '0;
      wpos <= '0;
      wleft <= '0;
    end else begin
      avail <= avail + CW'(in_hs) - (aw_hs ? CW'(alen) : '0);
      wcom <= wcom + (aw_hs ? CW'(alen) : '0) - CW'(w_hs);
      if (aw_hs) begin
        if (32'(apos) + 32'(alen) == F) begin
          apos <= '0;
          abase <= abase == LASTR ? FIRST : abase + RBYTES;
        end else apos <= apos + FW'(alen);
      end
      if (w_hs) begin
        wpos <= wpos == FW'(F - 1) ? '0 : wpos + 1'b1;
        wleft <= wlen - 1'b1;
      end
    end
  end

  // ---- B: the barrier ------------------------------------------------------------------------
  logic [NBW-1:0] bcnt;      // responses of the frame being completed
  logic [RW-1:0] rfr;        // complete frames not yet fully requested
  logic b_done, ar_end;
  assign m_axi_bready = 1'b1;
  assign b_done = m_axi_bvalid && bcnt == NBW'(NB - 1);

  // ---- AR: frames in order, a burst while the output FIFO has room for it ------------------
  logic [FW-1:0] rpos;
  logic [ADDR_W-1:0] rbase;
  logic [OW-1:0] occ;        // beats requested and not yet taken by the consumer
  logic [LW-1:0] rlen;
  logic ar_hs, m_hs;
  assign rlen = blen(rpos);
  assign m_axi_arvalid = rfr != '0 && occ + OW'(rlen) <= OW'(ODEPTH);
  assign m_axi_araddr = rbase + (ADDR_W'(rpos) << DBW);
  assign m_axi_arlen = 8'(rlen - 1'b1);
  assign m_axi_arsize = 3'(DBW);
  assign m_axi_arburst = 2'b01;
  assign ar_hs = m_axi_arvalid && m_axi_arready;
  assign ar_end = ar_hs && 32'(rpos) + 32'(rlen) == F;
  assign m_hs = m_axis_tvalid && m_axis_tready;

  // ---- R: into the output FIFO (room reserved by the AR) ------------------------------------
  logic [FW-1:0] rcnt;
  logic [$clog2(CHUNKS + 1)-1:0] rchunk;  // regions of the stream frame already read back
  logic of_ready_unused;
  assign m_axi_rready = 1'b1;
  assign r_end = m_axi_rvalid && rcnt == FW'(F - 1);
  fifo #(.WIDTH(SW), .DEPTH(ODEPTH)) u_ofifo (
      .clk, .rst, .s_axis_tvalid(m_axi_rvalid), .s_axis_tready(of_ready_unused),
      .s_axis_tdata(m_axi_rdata[SW-1:0]), .s_axis_tlast(rcnt == FW'(F - 1) && 32'(rchunk) == CHUNKS - 1),
      .m_axis_tvalid, .m_axis_tready, .m_axis_tdata, .m_axis_tlast);

  always_ff @(posedge clk) begin
    if (rst) begin
      bcnt <= '0;
      rfr <= '0;
      rpos <= '0;
      rbase <= FIRST;
      occ <= '0;
      rcnt <= '0;
      rchunk <= '0;
      inuse <= '0;
    end else begin
      if (m_axi_bvalid) bcnt <= b_done ? '0 : bcnt + 1'b1;
      rfr <= rfr + RW'(b_done) - RW'(ar_end);
      if (ar_hs) begin
        if (ar_end) begin
          rpos <= '0;
          rbase <= rbase == LASTR ? FIRST : rbase + RBYTES;
        end else rpos <= rpos + FW'(rlen);
      end
      occ <= occ + (ar_hs ? OW'(rlen) : '0) - OW'(m_hs);
      if (m_axi_rvalid) rcnt <= r_end ? '0 : rcnt + 1'b1;
      if (r_end) rchunk <= 32'(rchunk) == CHUNKS - 1 ? '0 : rchunk + 1'b1;
      inuse <= inuse + RW'(aw_hs && apos == '0) - RW'(r_end);
    end
  end

  // the output FIFO never refuses a beat (the AR reserved its room)
  /* verilator lint_off UNUSEDSIGNAL */
  wire unused_ok = of_ready_unused;
  /* verilator lint_on UNUSEDSIGNAL */
endmodule
`default_nettype wire
