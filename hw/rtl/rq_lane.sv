`default_nettype none
// One requantisation lane, two pipeline stages (both advance when en is high):
//   stage 1: p = acc * m (64-bit signed product; m is a positive int32)
//   stage 2: y = clamp(zp + ((p + 2^(s-1)) >>> s), lo, hi)
// RQ_LUT = 1 builds the product from LUTs (lut_mulw.sv: radix-4 Booth, no DSP48E2), same
// stages and the same bits; RQ_LUT = 0 leaves it to synthesis (four DSP48E2s).
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
  logic [31:0] cfg;
  generate
    if (RQ_LUT) begin : g_lut
      lut_mulw #(.XW(32), .MW(32)) mul (
          .x(acc),
          .m(signed'(rq[63:32])),
          .p(prod)
      );
    end else begin : g_dsp
      assign prod = 64'(acc) * 64'(signed'(rq[63:32]));
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
