`default_nettype none
// Two int8 x int8 products sharing the operand x in one DSP48E2 (27 x 18 multiplier):
//
//   A = w_hi * 2^18 + w_lo          (27-bit signed: {w_hi - s, {10{s}}, w_lo}, s = sign of w_lo)
//   P = A * x = w_hi*x * 2^18 + w_lo*x
//
// Every int8 product lies in [-16256, 16384], inside the 18-bit field [-2^17, 2^17), so
//   p_lo = P[17:0] as a signed 18-bit number = w_lo*x exactly (its low 16 bits suffice), and
//   P >>> 18 = w_hi*x + floor(p_lo / 2^18) = w_hi*x - (p_lo < 0), whence the correction
//   p_hi = (P >>> 18) + P[17]       (P[17] is the sign of the lower field),
// computed in 16 bits (the exact value fits, so the arithmetic mod 2^16 is exact).
// One product per field is separated per cycle (the bound is 1); up to 7 could share the
// lower field before separation (7 * 16384 < 2^17 <= 8 * 16384; docs/hardware.md).
// Timing: P is registered when en is high (the DSP's P register); p_hi/p_lo are
// combinational from it, one cycle after the operands, as a plain registered product.
module mac2 (
    input  wire               clk,
    input  wire               en,
    input  wire signed [ 7:0] x,
    input  wire signed [ 7:0] w_hi,
    input  wire signed [ 7:0] w_lo,
    output logic signed [15:0] p_hi,
    output logic signed [15:0] p_lo
);
  logic signed [26:0] a;
  /* verilator lint_off UNUSEDSIGNAL */  // p[34] and p[16]: the separation does not read them
  logic signed [34:0] p;
  /* verilator lint_on UNUSEDSIGNAL */
  // w_hi * 2^18 + w_lo without a 27-bit adder: the low 18 bits are w_lo sign-extended, the
  // high 9 bits w_hi plus the extension's all-ones (-1) when w_lo is negative
  assign a = {9'(w_hi) - 9'(w_lo[7]), {10{w_lo[7]}}, w_lo};
  always_ff @(posedge clk) begin
    if (en) p <= a * x;
  end
  assign p_lo = p[15:0];
  assign p_hi = p[33:18] + 16'(p[17]);
endmodule
`default_nettype wire
