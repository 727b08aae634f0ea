`default_nettype none
// A signed XW x MW-bit product in LUTs (no DSP48E2), combinational: radix-4 Booth recoding
// of m into D = ceil(MW/2) digits d_i in {-2, -1, 0, 1, 2} from bits (m[2i+1], m[2i], m[2i-1])
// (m[-1] = 0, m sign-extended to 2D bits), so m = sum_i d_i * 4^i and
//   p = sum_i (d_i * x) * 4^i,
// D partial products of 0, +-x, +-2x (a shift and a negation, no multiplier) summed in
// XW+MW bits (|x*m| <= 2^(XW+MW-2), so the sum modulo 2^(XW+MW) is exact). The requantiser's
// LUT variant (rq_lane.sv, RQ_LUT = 1: 32 x 25 bits) and the LUT elementwise lanes
// (eltwise.sv, RQ_LUT = 1: a constant m, which synthesis folds into a fixed shift-and-add)
// use it. use_dsp = "no" keeps Vivado in the fabric; Yosys sees no $mul cell.
module lut_mulw #(
    parameter int XW = 32,
    parameter int MW = 32
) (
    input  wire  signed [XW-1:0]    x,
    input  wire  signed [MW-1:0]    m,
    output logic signed [XW+MW-1:0] p
);
  localparam int D = (MW + 1) / 2;
  localparam int PW = XW + MW;
  initial begin
    if (XW < 2 || MW < 2) $error("lut_mulw: XW=%0d and MW=%0d must be at least 2", XW, MW);
  end
  logic signed [XW+1:0] x1, x2;
  logic [2*D:0] me;  // {m sign-extended to 2D bits, m[-1] = 0}
  assign x1 = (XW + 2)'(x);
  assign x2 = (XW + 2)'(x) <<< 1;
  assign me = {(2 * D)'(m), 1'b0};

  (* use_dsp = "no" *)
  logic signed [PW-1:0] sum;
  always_comb begin
    sum = '0;
    for (int i = 0; i < D; i++) begin
      logic signed [XW+1:0] t;
      case (me[2*i+:3])
        3'b001, 3'b010: t = x1;
        3'b011: t = x2;
        3'b100: t = -x2;
        3'b101, 3'b110: t = -x1;
        default: t = '0;  // 000, 111
      endcase
      sum = sum + (PW'(t) <<< (2 * i));
    end
  end
  assign p = sum;
endmodule
`default_nettype wire
