`default_nettype none
// One int8 x int8 product in LUTs (no DSP48E2): radix-4 Booth recoding of w into four
// digits d_i in {-2, -1, 0, 1, 2} from bits (w[2i+1], w[2i], w[2i-1]) (w[-1] = 0), so
//   w = sum_i d_i * 4^i    and    p = sum_i (d_i * x) * 4^i,
// four 10-bit partial products (0, +-x, +-2x: a shift and a negation, no multiplier)
// summed in 16 bits (|p| <= 16384 fits, so the sum mod 2^16 is exact). use_dsp = "no"
// tells Vivado to keep it in the fabric; Yosys maps it to LUTs and carry chains as written.
// Timing as mac2.sv: p is registered when en is high, one cycle after the operands.
// REG = 0: p is the sum itself, in the operands' cycle (clk and en unused): the vector unit
// (vvu.sv) adds its products into the accumulator in the cycle it reads them, as its DSP
// version does.
module lut_mul #(
    parameter bit REG = 1
) (
    /* verilator lint_off UNUSEDSIGNAL */  // REG = 0: a combinational product
    input  wire               clk,
    input  wire               en,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire signed [ 7:0] x,
    input  wire signed [ 7:0] w,
    output logic signed [15:0] p
);
  (* use_dsp = "no" *)
  logic signed [15:0] sum;
`ifdef BBG_TWIN_MUL
  // The design-level RTL twin (bbgrap_hls/rtlsim/build.py defines BBG_TWIN_MUL) computes the
  // product as x * w: tests/test_lut_macs.py proves it equal to the Booth sum below on all
  // 2^16 operand pairs, and Verilator's C++ for the Booth form, inlined per product, was most
  // of a LUT-multiplier design's build time. Synthesis and the module tests use the Booth form.
  assign sum = 16'(x) * 16'(w);
`else
  // Booth digit i from g = (w[2i+1], w[2i], w[2i-1]): x (g = 001, 010), 2x (011), -2x (100),
  // -x (101, 110), 0 (000, 111); the four choices computed once for all digits.
  logic signed [9:0] x1, x2, n1, n2;
  logic [8:0] we;
  logic signed [15:0] pp[4];
  assign x1 = 10'(x);
  assign x2 = 10'(x) <<< 1;
  assign n1 = -x1;
  assign n2 = -x2;
  assign we = {w, 1'b0};
  for (genvar i = 0; i < 4; i++) begin : g_d
    wire [2:0] g = we[2*i+:3];
    wire signed [9:0] t = (g == 3'b001 || g == 3'b010) ? x1
                        : (g == 3'b011) ? x2
                        : (g == 3'b100) ? n2
                        : (g == 3'b101 || g == 3'b110) ? n1 : 10'sd0;
    assign pp[i] = 16'(t) <<< (2 * i);
  end

  assign sum = pp[0] + pp[1] + pp[2] + pp[3];
`endif
  generate
    if (REG) begin : g_reg
      always_ff @(posedge clk) begin
        if (en) p <= sum;
      end
    end else begin : g_comb
      assign p = sum;
    end
  endgenerate
endmodule
`default_nettype wire
