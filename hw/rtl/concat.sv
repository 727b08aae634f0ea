`default_nettype none
// Channel concatenation of two NHWC streams sharing one scale: per pixel, C0/P beats of
// s0 then C1/P beats of s1. No storage and no cycle of delay; ii = H*W*(C0+C1)/P.
// More inputs chain: concat(concat(a, b), c) keeps the per-pixel order a, b, c.
module concat #(
    parameter int P  = 2,
    parameter int C0 = 4,
    parameter int C1 = 4,
    localparam int LI = P
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              s0_axis_tvalid,
    output logic             s0_axis_tready,
    input  wire  [LI*8-1:0]  s0_axis_tdata,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire              s0_axis_tlast,  // the s1 stream marks the frame end
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire              s1_axis_tvalid,
    output logic             s1_axis_tready,
    input  wire  [LI*8-1:0]  s1_axis_tdata,
    input  wire              s1_axis_tlast,
    output logic             m_axis_tvalid,
    input  wire              m_axis_tready,
    output logic [LI*8-1:0]  m_axis_tdata,
    output logic             m_axis_tlast
);
  localparam int N0 = C0 / P;
  localparam int N1 = C1 / P;
  localparam int NW = $clog2((N0 > N1 ? N0 : N1) + 1);
  initial begin
    if (P < 1 || C0 % P != 0 || C1 % P != 0) $error("concat: P=%0d must divide C0=%0d and C1=%0d", P, C0, C1);
  end

  logic sel;  // 0: taking s0's beats of this pixel, 1: s1's
  logic [NW-1:0] n;
  logic fire;
  assign m_axis_tvalid = sel ? s1_axis_tvalid : s0_axis_tvalid;
  assign m_axis_tdata = sel ? s1_axis_tdata : s0_axis_tdata;
  assign m_axis_tlast = sel && s1_axis_tlast;
  assign s0_axis_tready = !sel && m_axis_tready;
  assign s1_axis_tready = sel && m_axis_tready;
  assign fire = m_axis_tvalid && m_axis_tready;

  always_ff @(posedge clk) begin
    if (rst) begin
      sel <= 1'b0;
      n <= '0;
    end else if (fire) begin
      if (n == NW'((sel ? N1 : N0) - 1)) begin
        n <= '0;
        sel <= !sel;
      end else begin
        n <= n + 1'b1;
      end
    end
  end
endmodule
`default_nettype wire
