`default_nettype none
// Memory to stream for a Vitis RTL kernel: at go, reads frames*FRAME_BYTES bytes from
// base (an AXI4 read master, 64-bit addresses, INCR bursts of up to BURST beats of DATA_W
// bits, at most OUTSTANDING bursts in flight) and sends them as LANES-byte beats, byte
// b*LANES + j of the run in lane j of beat b (the layout of the HLS mem_to_stream),
// tlast on each frame's last beat. Bytes of the last memory beat past the run are dropped.
// base must be aligned to BURST*DATA_W/8 bytes (XRT buffers are 4 KB aligned), so that no
// burst crosses a 4 KB boundary. busy from the cycle after go until the last beat left.
module ctrl_mm2s #(
    parameter int DATA_W      = 64,
    parameter int LANES       = 4,
    parameter int FRAME_BYTES = 16,
    parameter int BURST       = 16,
    parameter int OUTSTANDING = 4
) (
    input  wire                  clk,
    input  wire                  rst,
    input  wire                  go,
    input  wire  [63:0]          base,
    input  wire  [31:0]          frames,
    output logic                 busy,
    output logic [63:0]          m_axi_araddr,
    output logic [7:0]           m_axi_arlen,
    output logic [2:0]           m_axi_arsize,
    output logic [1:0]           m_axi_arburst,
    output logic                 m_axi_arvalid,
    input  wire                  m_axi_arready,
    input  wire  [DATA_W-1:0]    m_axi_rdata,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire  [1:0]           m_axi_rresp,   // errors are not handled
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                  m_axi_rlast,
    input  wire                  m_axi_rvalid,
    output logic                 m_axi_rready,
    output logic                 m_axis_tvalid,
    input  wire                  m_axis_tready,
    output logic [8*LANES-1:0]   m_axis_tdata,
    output logic                 m_axis_tlast
);
  localparam int DB = DATA_W / 8;
  localparam int CAP = 2 * (DB > LANES ? DB : LANES);  // gearbox bytes
  localparam int CW = $clog2(CAP + 1);
  localparam int FRAME_BEATS = FRAME_BYTES / LANES;
  localparam int FW = FRAME_BEATS > 1 ? $clog2(FRAME_BEATS) : 1;
  localparam int OW = $clog2(OUTSTANDING + 1);

  initial begin
    if (DATA_W < 8 || (DATA_W & (DATA_W - 1)) != 0 || DATA_W > 512)
      $error("ctrl_mm2s: DATA_W=%0d must be a power of two in 8..512", DATA_W);
    if (LANES < 1 || FRAME_BYTES % LANES != 0)
      $error("ctrl_mm2s: LANES=%0d must divide FRAME_BYTES=%0d", LANES, FRAME_BYTES);
    if (BURST < 1 || BURST > 256 || (BURST & (BURST - 1)) != 0)
      $error("ctrl_mm2s: BURST=%0d must be a power of two in 1..256", BURST);
    if (OUTSTANDING < 1) $error("ctrl_mm2s: OUTSTANDING=%0d must be positive", OUTSTANDING);
  end

  // ---- run state -----------------------------------------------------------------------
  logic [63:0] ar_left;    // memory beats not yet requested
  logic [63:0] in_left;    // bytes not yet taken from R
  logic [63:0] out_left;   // stream beats not yet sent
  logic [OW-1:0] pending;  // bursts requested and not finished
  logic [FW-1:0] fb;       // beat in frame
  assign busy = out_left != '0;

  // ---- read address --------------------------------------------------------------------
  assign m_axi_arsize = 3'($clog2(DB));
  assign m_axi_arburst = 2'b01;  // INCR
  assign m_axi_arlen = ar_left >= 64'(BURST) ? 8'(BURST - 1) : 8'(ar_left - 64'd1);
  assign m_axi_arvalid = ar_left != '0 && pending != OW'(OUTSTANDING);
  wire ar_fire = m_axi_arvalid && m_axi_arready;
  wire r_fire = m_axi_rvalid && m_axi_rready;
  wire r_end = r_fire && m_axi_rlast;

  // ---- gearbox: cnt bytes held at the bottom of buf, the bytes above them zero ----------
  logic [8*CAP-1:0] buf_q;
  logic [CW-1:0] cnt;
  assign m_axi_rready = cnt <= CW'(CAP - DB);
  assign m_axis_tvalid = cnt >= CW'(LANES);
  assign m_axis_tdata = buf_q[8*LANES-1:0];
  assign m_axis_tlast = fb == FW'(FRAME_BEATS - 1);
  wire out_fire = m_axis_tvalid && m_axis_tready;

  wire [CW-1:0] take = in_left >= 64'(DB) ? CW'(DB) : CW'(in_left);
  logic [DATA_W-1:0] rmask;
  always_comb
    for (int i = 0; i < DB; i++) rmask[8*i +: 8] = CW'(i) < take ? 8'hff : 8'h00;
  wire [CW-1:0] c1 = out_fire ? cnt - CW'(LANES) : cnt;
  wire [8*CAP-1:0] b1 = out_fire ? buf_q >> (8 * LANES) : buf_q;
  wire [8*CAP-1:0] ins = (8*CAP)'(m_axi_rdata & rmask) << (8 * c1);

  always_ff @(posedge clk) begin
    if (rst) begin
      ar_left <= '0;
      in_left <= '0;
      out_left <= '0;
      pending <= '0;
      fb <= '0;
      buf_q <= '0;
      cnt <= '0;
      m_axi_araddr <= '0;
    end else begin
      if (go) begin
        ar_left <= (64'(frames) * 64'(FRAME_BYTES) + 64'(DB - 1)) / 64'(DB);
        in_left <= 64'(frames) * 64'(FRAME_BYTES);
        out_left <= 64'(frames) * 64'(FRAME_BEATS);
        m_axi_araddr <= base;
        fb <= '0;
      end else begin
        if (ar_fire) begin
          ar_left <= ar_left - (64'(m_axi_arlen) + 64'd1);
          m_axi_araddr <= m_axi_araddr + 64'(BURST * DB);
        end
        if (r_fire) in_left <= in_left - 64'(take);
        if (out_fire) begin
          out_left <= out_left - 64'd1;
          fb <= fb == FW'(FRAME_BEATS - 1) ? '0 : fb + FW'(1);
        end
      end
      pending <= pending + OW'(ar_fire) - OW'(r_end);
      buf_q <= r_fire ? b1 | ins : b1;
      cnt <= r_fire ? c1 + take : c1;
    end
  end
endmodule
`default_nettype wire
