`default_nettype none
// Repeat one C-channel pixel PIXELS times (bb::repeat_pixel: the broadcast of an (N, C, 1, 1)
// operand over H*W pixels, e.g. the squeeze-excite Mul). P lanes, N = C/P beats per pixel.
// The first repetition passes the input beats straight through (no cycle of delay) while
// storing them (N words of P*8 bits, LUTRAM); the other PIXELS-1 repetitions are read
// from that memory, one beat per cycle. The next frame's pixel is taken once the last
// repetition is out: ii = PIXELS*C/P, the output's rate. tlast on the frame's last beat.
module repeat_pixel #(
    parameter int C      = 4,
    parameter int P      = 2,
    parameter int PIXELS = 4
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              s_axis_tvalid,
    output logic             s_axis_tready,
    input  wire  [P*8-1:0]   s_axis_tdata,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire              s_axis_tlast,  // the frame is one pixel: the counters know its end
    /* verilator lint_on UNUSEDSIGNAL */
    output logic             m_axis_tvalid,
    input  wire              m_axis_tready,
    output logic [P*8-1:0]   m_axis_tdata,
    output logic             m_axis_tlast
);
  localparam int N = C / P;
  localparam int NW = N > 1 ? $clog2(N) : 1;
  localparam int RW = PIXELS > 1 ? $clog2(PIXELS) : 1;
  localparam logic [NW-1:0] LASTB = NW'(N - 1);
  localparam logic [RW-1:0] LASTR = RW'(PIXELS - 1);
  initial begin
    if (P < 1 || C % P != 0) $error("repeat_pixel: P=%0d must divide C=%0d", P, C);
    if (PIXELS < 1) $error("repeat_pixel: PIXELS=%0d must be positive", PIXELS);
  end

  logic [P*8-1:0] mem[N];
  logic [NW-1:0] k;   // beat of the pixel
  logic [RW-1:0] r;   // repetition (0: the pass-through one)
  logic replay, fire;

  assign replay = r != '0;
  assign m_axis_tvalid = replay || s_axis_tvalid;
  assign m_axis_tdata = replay ? mem[k] : s_axis_tdata;
  assign m_axis_tlast = r == LASTR && k == LASTB;
  assign s_axis_tready = !replay && m_axis_tready;
  assign fire = m_axis_tvalid && m_axis_tready;

  always_ff @(posedge clk) begin
    if (fire && !replay) mem[k] <= s_axis_tdata;
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      k <= '0;
      r <= '0;
    end else if (fire) begin
      k <= k == LASTB ? '0 : k + 1'b1;
      if (k == LASTB) r <= r == LASTR ? '0 : r + 1'b1;
    end
  end
endmodule
`default_nettype wire
