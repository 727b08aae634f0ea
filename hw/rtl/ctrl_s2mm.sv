`default_nettype none
// Stream to memory for a Vitis RTL kernel: at go, takes frames*FRAME_BYTES/LANES beats of
// LANES bytes and writes them from base (lane j of beat b at byte b*LANES + j, the layout
// of the HLS stream_to_mem) through an AXI4 write master: 64-bit addresses, INCR bursts of
// up to BURST beats of DATA_W bits, the run's last memory beat with only its bytes'
// strobes. Addresses run ahead of the data (every burst's address is issued as soon as
// possible); a burst's data follows as the stream delivers it. base must be aligned to
// BURST*DATA_W/8 bytes (XRT buffers are 4 KB aligned). busy from the cycle after go until
// the response of the last burst came back, i.e. the run's bytes are in memory.
module ctrl_s2mm #(
    parameter int DATA_W      = 64,
    parameter int LANES       = 4,
    parameter int FRAME_BYTES = 16,
    parameter int BURST       = 16
) (
    input  wire                  clk,
    input  wire                  rst,
    input  wire                  go,
    input  wire  [63:0]          base,
    input  wire  [31:0]          frames,
    output logic                 busy,
    input  wire                  s_axis_tvalid,
    output logic                 s_axis_tready,
    input  wire  [8*LANES-1:0]   s_axis_tdata,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire                  s_axis_tlast,  // beats are counted
    input  wire  [1:0]           m_axi_bresp,   // errors are not handled
    /* verilator lint_on UNUSEDSIGNAL */
    output logic [63:0]          m_axi_awaddr,
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
    input  wire                  m_axi_bvalid,
    output logic                 m_axi_bready
);
  localparam int DB = DATA_W / 8;
  localparam int CAP = 2 * (DB > LANES ? DB : LANES);
  localparam int CW = $clog2(CAP + 1);
  localparam int PW = BURST > 1 ? $clog2(BURST) : 1;

  initial begin
    if (DATA_W < 8 || (DATA_W & (DATA_W - 1)) != 0 || DATA_W > 512)
      $error("ctrl_s2mm: DATA_W=%0d must be a power of two in 8..512", DATA_W);
    if (LANES < 1 || FRAME_BYTES % LANES != 0)
      $error("ctrl_s2mm: LANES=%0d must divide FRAME_BYTES=%0d", LANES, FRAME_BYTES);
    if (BURST < 1 || BURST > 256 || (BURST & (BURST - 1)) != 0)
      $error("ctrl_s2mm: BURST=%0d must be a power of two in 1..256", BURST);
  end

  logic [63:0] in_left;   // stream beats not yet taken
  logic [63:0] aw_left;   // memory beats whose burst address is not yet issued
  logic [63:0] w_left;    // memory beats not yet written
  logic [63:0] b_left;    // bursts not yet acknowledged
  logic [PW-1:0] wpos;    // beat in burst
  assign busy = b_left != '0;

  assign m_axi_awsize = 3'($clog2(DB));
  assign m_axi_awburst = 2'b01;
  assign m_axi_awlen = aw_left >= 64'(BURST) ? 8'(BURST - 1) : 8'(aw_left - 64'd1);
  assign m_axi_awvalid = aw_left != '0;
  assign m_axi_bready = 1'b1;

  logic [8*CAP-1:0] buf_q;
  logic [CW-1:0] cnt;
  wire tail = in_left == '0 && cnt != '0 && cnt < CW'(DB);
  assign s_axis_tready = in_left != '0 && cnt <= CW'(CAP - LANES);
  assign m_axi_wvalid = w_left != '0 && (cnt >= CW'(DB) || tail);
  assign m_axi_wdata = buf_q[DATA_W-1:0];
  always_comb
    for (int i = 0; i < DB; i++) m_axi_wstrb[i] = !tail || CW'(i) < cnt;
  assign m_axi_wlast = wpos == PW'(BURST - 1) || w_left == 64'd1;
  wire w_fire = m_axi_wvalid && m_axi_wready;
  wire in_fire = s_axis_tvalid && s_axis_tready;
  wire [CW-1:0] c1 = w_fire ? (tail ? '0 : cnt - CW'(DB)) : cnt;
  wire [8*CAP-1:0] b1 = w_fire ? buf_q >> (8 * DB) : buf_q;
  wire [8*CAP-1:0] ins = (8*CAP)'(s_axis_tdata) << (8 * c1);

  always_ff @(posedge clk) begin
    if (rst) begin
      in_left <= '0;
      aw_left <= '0;
      w_left <= '0;
      b_left <= '0;
      wpos <= '0;
      buf_q <= '0;
      cnt <= '0;
      m_axi_awaddr <= '0;
    end else begin
      if (go) begin
        in_left <= 64'(frames) * 64'(FRAME_BYTES / LANES);
        aw_left <= (64'(frames) * 64'(FRAME_BYTES) + 64'(DB - 1)) / 64'(DB);
        w_left <= (64'(frames) * 64'(FRAME_BYTES) + 64'(DB - 1)) / 64'(DB);
        b_left <= (64'(frames) * 64'(FRAME_BYTES) + 64'(BURST * DB - 1)) / 64'(BURST * DB);
        m_axi_awaddr <= base;
        wpos <= '0;
      end else begin
        if (m_axi_awvalid && m_axi_awready) begin
          aw_left <= aw_left - (64'(m_axi_awlen) + 64'd1);
          m_axi_awaddr <= m_axi_awaddr + 64'(BURST * DB);
        end
        if (in_fire) in_left <= in_left - 64'd1;
        if (w_fire) begin
          w_left <= w_left - 64'd1;
          wpos <= m_axi_wlast ? '0 : wpos + PW'(1);
        end
        if (m_axi_bvalid && b_left != '0) b_left <= b_left - 64'd1;
      end
      buf_q <= in_fire ? b1 | ins : b1;
      cnt <= in_fire ? c1 + CW'(LANES) : c1;
    end
  end
endmodule
`default_nettype wire
