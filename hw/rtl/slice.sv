`default_nettype none
// Crop of an (H, W, C) stream at P lanes (bb::slice2d, the Slice op): rows [Y0, Y0+HO),
// columns [X0, X0+WO), channels [C0, C0+CO); N = C/P input beats, NO = CO/P output beats a
// pixel. Every input beat is taken in one cycle. The pixel's bytes are kept in a bank as they
// arrive; a kept pixel's output beat j leaves with its input beat N-NO+j (output register):
// lane l is channel C0 + j*P + l, from the bank or, when it is in the current beat, from the
// input. So C0 need not be a multiple of P and the timing does not depend on it: the first
// output beat leaves 1 cycle after input beat (Y0*W + X0)*N + N-NO, ii = H*W*C/P.
module slice #(
    parameter int C  = 4,
    parameter int CO = 2,
    parameter int C0 = 0,
    parameter int P  = 2,
    parameter int H  = 2,
    parameter int W  = 2,
    parameter int Y0 = 0,
    parameter int X0 = 0,
    parameter int HO = 2,
    parameter int WO = 2
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              s_axis_tvalid,
    output logic             s_axis_tready,
    input  wire  [P*8-1:0]   s_axis_tdata,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire              s_axis_tlast,  // the counters know the frame's end
    /* verilator lint_on UNUSEDSIGNAL */
    output logic             m_axis_tvalid,
    input  wire              m_axis_tready,
    output logic [P*8-1:0]   m_axis_tdata,
    output logic             m_axis_tlast
);
  localparam int N = C / P;
  localparam int NO = CO / P;
  localparam int NW = N > 1 ? $clog2(N) : 1;
  localparam int XW = W > 1 ? $clog2(W) : 1;
  localparam int YW = H > 1 ? $clog2(H) : 1;
  initial begin
    if (P < 1 || C % P != 0 || CO % P != 0 || CO < P) $error("slice: P=%0d must divide C=%0d and CO=%0d", P, C, CO);
    if (C0 < 0 || C0 + CO > C || Y0 < 0 || Y0 + HO > H || X0 < 0 || X0 + WO > W || HO < 1 || WO < 1)
      $error("slice: the box must lie inside the frame");
  end

  logic [7:0] bank[C];
  logic [7:0] view[C];  // the pixel so far, the current beat overlaid
  logic [NW-1:0] cb;
  logic [XW-1:0] x;
  logic [YW-1:0] y;
  logic keep, emit, last, fire;
  logic [NW-1:0] j;
  logic [P*8-1:0] sel;

  assign keep = int'(y) >= Y0 && int'(y) < Y0 + HO && int'(x) >= X0 && int'(x) < X0 + WO;
  assign emit = keep && int'(cb) >= N - NO;
  assign last = int'(y) == Y0 + HO - 1 && int'(x) == X0 + WO - 1 && int'(cb) == N - 1;
  assign j = cb - NW'(N - NO);
  assign s_axis_tready = !m_axis_tvalid || m_axis_tready;
  assign fire = s_axis_tvalid && s_axis_tready;

  always_comb begin
    for (int k = 0; k < C; k++) view[k] = (k / P == int'(cb)) ? s_axis_tdata[(k % P)*8 +: 8] : bank[k];
    for (int l = 0; l < P; l++) begin
      sel[l*8 +: 8] = 8'h00;
      for (int jj = 0; jj < NO; jj++)
        if (int'(j) == jj) sel[l*8 +: 8] = view[C0 + jj * P + l];
    end
  end

  always_ff @(posedge clk) begin
    if (fire)
      for (int l = 0; l < P; l++) bank[int'(cb) * P + l] <= s_axis_tdata[l*8 +: 8];
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      cb <= '0;
      x <= '0;
      y <= '0;
      m_axis_tvalid <= 1'b0;
      m_axis_tlast <= 1'b0;
      m_axis_tdata <= '0;
    end else begin
      if (fire) begin
        if (cb == NW'(N - 1)) begin
          cb <= '0;
          if (x == XW'(W - 1)) begin
            x <= '0;
            y <= y == YW'(H - 1) ? '0 : y + 1'b1;
          end else begin
            x <= x + 1'b1;
          end
        end else begin
          cb <= cb + 1'b1;
        end
      end
      if (fire && emit) begin
        m_axis_tvalid <= 1'b1;
        m_axis_tdata <= sel;
        m_axis_tlast <= last;
      end else if (m_axis_tready) begin
        m_axis_tvalid <= 1'b0;
      end
    end
  end
endmodule
`default_nettype wire
