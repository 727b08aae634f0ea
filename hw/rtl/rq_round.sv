`default_nettype none
// Rounding, zero point and clamp of a 64-bit requantisation product, one pipeline stage:
//   y = clamp(zp + ((v + 2^(s-1)) >>> s), lo, hi)   (s = 0: no rounding term)
module rq_round (
    input  wire               clk,
    input  wire               en,
    input  wire signed [63:0] v,
    input  wire        [31:0] cfg,   // {s[7:0], zp[7:0], lo[7:0], hi[7:0]}
    output logic       [ 7:0] y
);
  logic [5:0] s;
  logic signed [63:0] half, r, z;
  logic signed [7:0] lo, hi;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [1:0] s_hi;  // shifts stay below 64
  /* verilator lint_on UNUSEDSIGNAL */
  always_comb begin
    {s_hi, s} = cfg[31:24];
    lo = signed'(cfg[15:8]);
    hi = signed'(cfg[7:0]);
    half = s == 6'd0 ? 64'sd0 : 64'sd1 <<< (s - 6'd1);
    r = (v + half) >>> s;
    z = r + 64'(signed'(cfg[23:16]));
  end
  always_ff @(posedge clk) begin
    if (en) begin
      if (z < 64'(lo)) y <= lo;
      else if (z > 64'(hi)) y <= hi;
      else y <= z[7:0];
    end
  end
endmodule
`default_nettype wire
