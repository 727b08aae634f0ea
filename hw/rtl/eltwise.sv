`default_nettype none
// Elementwise Add (OP = 0) or Mul (OP = 1) of two int8 streams, requantised in one rounding:
//   OP 0: y = clamp(ZY + ((MA*(a-ZA) + MB*(b-ZB) + 2^(S-1)) >>> S), LO, HI)
//   OP 1: y = clamp(ZY + (((a-ZA)*(b-ZB)*M + 2^(S-1)) >>> S), LO, HI)
// per tensor (constants are parameters; Sub is an Add with a negative MB). The multipliers
// are the quantiser's (|MA|, |MB|, M < 2^24, MULT_BITS), so each product is 9 x 25 or
// 18 x 25 bits: one DSP48E2 each (27 x 18), two a lane. RQ_LUT = 1 builds
// the products from LUTs (lut_mulw.sv; the constant folds into shift-and-adds), no DSP48E2,
// same bits and cycles. P lanes; one beat
// of each input per cycle; output 2 cycles after the inputs' handshake; ii = H*W*C/P.
module eltwise #(
    parameter int P  = 2,
    parameter int OP = 0,
    parameter int MA = 1 << 20,
    parameter int MB = 1 << 20,
    parameter int M  = 1 << 20,
    parameter int ZA = 0,
    parameter int ZB = 0,
    parameter int ZY = 0,
    parameter int S  = 20,
    parameter int LO = -128,
    parameter int HI = 127,
    parameter bit RQ_LUT = 0
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              s0_axis_tvalid,
    output logic             s0_axis_tready,
    input  wire  [P*8-1:0]   s0_axis_tdata,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire              s0_axis_tlast,  // the s1 stream marks the frame end
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire              s1_axis_tvalid,
    output logic             s1_axis_tready,
    input  wire  [P*8-1:0]   s1_axis_tdata,
    input  wire              s1_axis_tlast,
    output logic             m_axis_tvalid,
    input  wire              m_axis_tready,
    output logic [P*8-1:0]   m_axis_tdata,
    output logic             m_axis_tlast
);
  initial begin
    if (OP != 0 && OP != 1) $error("eltwise: OP=%0d must be 0 (add) or 1 (mul)", OP);
    if (S < 0 || S > 62) $error("eltwise: S=%0d must be in 0..62", S);
    if (LO > HI || LO < -128 || HI > 127) $error("eltwise: LO=%0d HI=%0d must be an int8 range", LO, HI);
    if (MA <= -(1 << 24) || MA >= (1 << 24) || MB <= -(1 << 24) || MB >= (1 << 24) || M < 0 || M >= (1 << 24))
      $error("eltwise: MA=%0d MB=%0d M=%0d must be below 2^24 in magnitude (M >= 0)", MA, MB, M);
  end
  localparam logic signed [24:0] MA25 = 25'(MA), MB25 = 25'(MB), M25 = 25'(M);
  localparam logic [31:0] CFG = {8'(S), 8'(ZY), 8'(LO), 8'(HI)};

  logic en, fire, v1q, v2q, last1, last2;
  logic signed [63:0] v1[P];
  logic signed [8:0] da[P], db[P];  // the operands less their zero points
  assign en = !v2q || m_axis_tready;
  assign fire = en && s0_axis_tvalid && s1_axis_tvalid;
  assign s0_axis_tready = en && s1_axis_tvalid;
  assign s1_axis_tready = en && s0_axis_tvalid;

  always_comb begin
    for (int i = 0; i < P; i++) begin
      da[i] = signed'(s0_axis_tdata[8*i+:8]) - 9'(ZA);
      db[i] = signed'(s1_axis_tdata[8*i+:8]) - 9'(ZB);
    end
  end

  // stage 1: the operation's products (only the selected one is built)
  if (RQ_LUT && OP == 0) begin : g_add_lut
    logic signed [33:0] pa[P], pb[P];
    for (genvar i = 0; i < P; i++) begin : g_l
      lut_mulw #(.XW(9), .MW(25)) ma (.x(da[i]), .m(MA25), .p(pa[i]));
      lut_mulw #(.XW(9), .MW(25)) mb (.x(db[i]), .m(MB25), .p(pb[i]));
    end
    always_ff @(posedge clk) begin
      if (en) for (int i = 0; i < P; i++) v1[i] <= 64'(pa[i]) + 64'(pb[i]);
    end
  end else if (RQ_LUT) begin : g_mul_lut
    logic signed [17:0] ab[P];
    logic signed [42:0] pm[P];
    for (genvar i = 0; i < P; i++) begin : g_l
      lut_mulw #(.XW(9), .MW(9)) mab (.x(da[i]), .m(db[i]), .p(ab[i]));
      lut_mulw #(.XW(18), .MW(25)) mm (.x(ab[i]), .m(M25), .p(pm[i]));
    end
    always_ff @(posedge clk) begin
      if (en) for (int i = 0; i < P; i++) v1[i] <= 64'(pm[i]);
    end
  end else if (OP == 0) begin : g_add
    logic signed [33:0] pa[P], pb[P];  // 9 x 25 bits: one DSP48E2 each
    always_comb begin
      for (int i = 0; i < P; i++) begin
        pa[i] = da[i] * MA25;
        pb[i] = db[i] * MB25;
      end
    end
    always_ff @(posedge clk) begin
      if (en) for (int i = 0; i < P; i++) v1[i] <= 64'(pa[i]) + 64'(pb[i]);
    end
  end else begin : g_mul
    logic signed [17:0] ab[P];
    logic signed [42:0] pm[P];  // 9 x 9 and 18 x 25 bits: one DSP48E2 each
    always_comb begin
      for (int i = 0; i < P; i++) begin
        ab[i] = 18'(da[i]) * 18'(db[i]);
        pm[i] = ab[i] * M25;
      end
    end
    always_ff @(posedge clk) begin
      if (en) for (int i = 0; i < P; i++) v1[i] <= 64'(pm[i]);
    end
  end

  always_ff @(posedge clk) begin
    if (en) begin
      last1 <= s1_axis_tlast;
      last2 <= last1;
    end
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      v1q <= 1'b0;
      v2q <= 1'b0;
    end else if (en) begin
      v1q <= fire;
      v2q <= v1q;
    end
  end

  // stage 2: rounding shift, zero point and clamp
  for (genvar i = 0; i < P; i++) begin : g_lane
    rq_round round (
        .clk(clk),
        .en (en),
        .v  (v1[i]),
        .cfg(CFG),
        .y  (m_axis_tdata[8*i+:8])
    );
  end
  assign m_axis_tvalid = v2q;
  assign m_axis_tlast = last2 && v2q;
endmodule
`default_nettype wire
