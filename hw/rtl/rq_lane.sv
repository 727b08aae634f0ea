`default_nettype none
// One requantisation lane, two pipeline stages (both advance when en is high):
//   stage 1: p = acc * m (exact signed product; 0 <= m < 2^24, the quantiser's MULT_BITS)
//   stage 2: y = clamp(zp + ((p + 2^(s-1)) >>> s), lo, hi)
// RQ_LUT = 0: two DSP48E2s, m (25-bit signed, top bit 0) on each A port (27 bits) times
// one half of acc on its B port (18 bits): acc = acc[31:17] * 2^17 + acc[16:0] (the low
// half unsigned, so 18 bits with a 0 on top), p = (m * acc[31:17] <<< 17) + m * acc[16:0],
// exact for every int32 acc (a 32 x 32-bit product was four). RQ_LUT = 1 builds the
// 32 x 25-bit product from LUTs (lut_mulw.sv: radix-4 Booth, no DSP48E2), same stages and
// the same bits. Bits 63:56 of rq (above m) are ignored.
module rq_lane #(
    parameter bit RQ_LUT = 0
) (
    input  wire               clk,
    input  wire               en,
    input  wire signed [31:0] acc,
    input  wire        [63:0] rq,    // {m[31:0], s[7:0], zp[7:0], lo[7:0], hi[7:0]}
    output logic       [ 7:0] y
);
  logic signed [63:0] p, prod;
  logic signed [24:0] m;
  logic [31:0] cfg;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [7:0] m_top;  // multipliers stay below 2^24
  /* verilator lint_on UNUSEDSIGNAL */
  assign {m_top, m} = {rq[63:56], 1'b0, rq[55:32]};
  generate
    if (RQ_LUT) begin : g_lut
      logic signed [56:0] pw;
      lut_mulw #(.XW(32), .MW(25)) mul (
          .x(acc),
          .m(m),
          .p(pw)
      );
      assign prod = 64'(pw);
    end else begin : g_dsp
      logic signed [17:0] a_lo;
      logic signed [14:0] a_hi;
      logic signed [42:0] p_lo;  // 25 x 18 bits: one DSP48E2
      logic signed [39:0] p_hi;  // 25 x 15 bits: one DSP48E2
      assign a_lo = {1'b0, acc[16:0]};
      assign a_hi = acc[31:17];
      assign p_lo = m * a_lo;
      assign p_hi = m * a_hi;
      assign prod = (64'(p_hi) <<< 17) + 64'(p_lo);
    end
  endgenerate
  always_ff @(posedge clk) begin
    if (en) begin
      p   <= prod;
      cfg <= rq[31:0];
    end
  end
  rq_round round (
      .clk(clk),
      .en (en),
      .v  (p),
      .cfg(cfg),
      .y  (y)
  );
endmodule
`default_nettype wire
