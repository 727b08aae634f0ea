`default_nettype none
// One requantisation lane, two pipeline stages (both advance when en is high):
//   stage 1: p = acc * m (64-bit signed product; m is a positive int32)
//   stage 2: y = clamp(zp + ((p + 2^(s-1)) >>> s), lo, hi)
module rq_lane (
    input  wire               clk,
    input  wire               en,
    input  wire signed [31:0] acc,
    input  wire        [63:0] rq,    // {m[31:0], s[7:0], zp[7:0], lo[7:0], hi[7:0]}
    output logic       [ 7:0] y
);
  logic signed [63:0] p;
  logic [31:0] cfg;
  always_ff @(posedge clk) begin
    if (en) begin
      p   <= 64'(acc) * 64'(signed'(rq[63:32]));
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
