`default_nettype none
// Rounding, zero point and clamp of a 64-bit requantisation product, one pipeline stage:
//   y = clamp(zp + ((v + 2^(s-1)) >>> s), lo, hi)   (s = 0: no rounding term)
//
// Computed without a 64-bit adder or a 64-bit shifter (docs/numerics.md, "Requantisation multipliers"):
//   w = {v, 0} >>> s   (= 2v at s = 0, floor(v / 2^(s-1)) otherwise)
//   r = (w + 1) >>> 1  (= floor((v + 2^(s-1)) / 2^s), and v itself at s = 0)
// The output is an int8 and zp, lo and hi are too, so only w's low 10 bits matter: when w
// does not fit in 10 signed bits, |r| >= 256 and zp + r lies beyond [-128, 127] on w's
// side, which the clamp maps to hi (w > 0) or lo (w < 0), as the wide sum would. The
// shifter keeps at each of its 6 stages only the bits that can still reach bit 9
// (10 + 2^k - 1 after the stage shifting by 2^k: 41, 25, 17, 13, 11, 10) and folds the
// dropped ones into a flag that says whether any of them differs from v's sign.
module rq_round (
    input  wire               clk,
    input  wire               en,
    input  wire signed [63:0] v,
    input  wire        [31:0] cfg,   // {s[7:0], zp[7:0], lo[7:0], hi[7:0]}
    output logic       [ 7:0] y
);
  localparam int W = 10;  // w's bits that reach the output
  logic [5:0] s;
  logic sgn;
  logic signed [7:0] lo, hi;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [1:0] s_hi;  // shifts stay below 64
  /* verilator lint_on UNUSEDSIGNAL */
  assign {s_hi, s} = cfg[31:24];
  assign lo = signed'(cfg[15:8]);
  assign hi = signed'(cfg[7:0]);
  assign sgn = v[63];

  // Stage k (5 down to 0) shifts by 2^k when s[k] is set; then only the low W + 2^k - 1
  // bits can still reach bit W - 1: the ones above are checked against the sign (odd) and
  // replaced by it, so the next stages' logic on them folds away.
  logic [64:0] x;
  logic [W-1:0] w;
  logic odd;  // a dropped bit differs from the sign
  always_comb begin
    x = {v, 1'b0};
    odd = 1'b0;
    for (int k = 5; k >= 0; k--) begin
      if (s[k]) x = 65'(signed'(x) >>> (1 << k));
      odd = odd | (|((x ^ {65{sgn}}) >> (W + (1 << k) - 1)));
      x = (x & ((65'd1 << (W + (1 << k) - 1)) - 65'd1)) | ({65{sgn}} << (W + (1 << k) - 1));
    end
    w = x[W-1:0];
  end

  // w fits in W signed bits when no dropped bit and not its own top bit differ from the sign
  localparam logic signed [W:0] ONE = 1;
  logic fits;
  logic signed [W:0] r;
  logic signed [W+1:0] z;
  assign fits = !odd && (w[W-1] == sgn);
  assign r = (signed'({w[W-1], w}) + ONE) >>> 1;
  assign z = (W + 2)'(r) + (W + 2)'(signed'(cfg[23:16]));

  always_ff @(posedge clk) begin
    if (en) begin
      if (!fits) y <= sgn ? lo : hi;
      else if (z < (W + 2)'(lo)) y <= lo;
      else if (z > (W + 2)'(hi)) y <= hi;
      else y <= z[7:0];
    end
  end
endmodule
`default_nettype wire
