`default_nettype none
// Convolution: swg -> mvu (docs/hardware.md). The mvu's matrix is Co x (KH*KW*C), column
// k*C + c for tap k = ky*KW + kx, so W_FILE holds W[co][ky][kx][c] in mvu fold order.
// Padding inserts the input zero point PAD_VAL. A 1x1 kernel with stride 1 and no padding
// skips the window generator. SIMD | C, or SIMD = C*J with J | KH*KW (parallel window: the
// swg reads C lanes and emits J taps per beat).
// ii = max(Hp*Wp*C/min(SIMD, C), Ho*Wo*(K*C/SIMD)*(CO/PE)).
// Pixel copies (M > 1, 1 <= M <= NF = CO/PE): M mvus with the same memories behind the one
// window generator; mmv_split deals the windows round robin (SF = K*C/SIMD beats each),
// a dwc per copy gathers its NF beats into one pixel of CO lanes and mmv_merge emits the
// pixels round robin, one CO-lane beat per pixel (output port CO*8 bits wide). Window w is
// first read at (w div M)*SF*NF + (w mod M)*SF when the swg is never starved (the 1x1 path
// without swg works the same), so
// ii = max(Hp*Wp*C/min(SIMD, C), Ho*Wo*SF*NF/M) on average (sim/expect.py mmv_conv).
module conv #(
    parameter int C       = 4,
    parameter int CO      = 4,
    parameter int SIMD    = 2,
    parameter int PE      = 2,
    parameter int H       = 4,
    parameter int W       = 4,
    parameter int KH      = 3,
    parameter int KW      = 3,
    parameter int SH      = 1,
    parameter int SW      = 1,
    parameter int DH      = 1,
    parameter int DW      = 1,
    parameter int PT      = 1,
    parameter int PL      = 1,
    parameter int PB      = 1,
    parameter int PR      = 1,
    parameter int PAD_VAL = 0,
    parameter     W_FILE  = "",
    parameter     W_STYLE = "block",  // weight ROM: "block" or "logic" (mvu.sv)
    parameter     B_FILE  = "",
    parameter     RQ_FILE = "",
    parameter int M       = 1,
    parameter int PACK    = 1,  // 2: two output lanes per DSP48E2 (mvu.sv, mac2.sv)
    parameter bit RQ_LUT  = 0,  // 1: the requantisers' products in LUTs (rq_lane.sv)
    // parallel window: SIMD = C*J (J taps of the window per beat), input at C lanes
    localparam int J  = SIMD > C ? SIMD / C : 1,
    localparam int LI = SIMD > C ? C : SIMD,
    localparam int LO = M > 1 ? CO : PE
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 s_axis_tvalid,
    output logic                s_axis_tready,
    input  wire  [LI*8-1:0]     s_axis_tdata,
    input  wire                 s_axis_tlast,
    output logic                m_axis_tvalid,
    input  wire                 m_axis_tready,
    output logic [LO*8-1:0]     m_axis_tdata,
    output logic                m_axis_tlast
);
  initial begin
    if (SIMD > C && (SIMD % C != 0 || (KH * KW) % (SIMD / C) != 0))
      $error("conv: SIMD=%0d must divide C=%0d or be C*J with J dividing %0d", SIMD, C, KH * KW);
    if (M < 1 || M > CO / PE) $error("conv: M=%0d copies must be in 1..CO/PE=%0d", M, CO / PE);
  end
  localparam bit DIRECT = KH == 1 && KW == 1 && SH == 1 && SW == 1 && PT + PL + PB + PR == 0;
  logic wv, wr, wl;
  logic [SIMD*8-1:0] wd;
  generate
    if (DIRECT) begin : g_direct
      assign wv = s_axis_tvalid;
      assign s_axis_tready = wr;
      assign wd = s_axis_tdata;
      assign wl = s_axis_tlast;
    end else begin : g_swg
      swg #(.C(C), .SIMD(LI), .J(J),
      .H(H), .W(W), .KH(KH), .KW(KW), .SH(SH), .SW(SW), .DH(DH), .DW(DW),
      .PT(PT), .PL(PL), .PB(PB), .PR(PR), .PAD_VAL(PAD_VAL)
      ) win (
      .clk(clk), .rst(rst), .s_axis_tvalid(s_axis_tvalid), .s_axis_tready(s_axis_tready),
      .s_axis_tdata(s_axis_tdata), .s_axis_tlast(s_axis_tlast), .m_axis_tvalid(wv),
      .m_axis_tready(wr), .m_axis_tdata(wd), .m_axis_tlast(wl)
      );
    end
  endgenerate
  generate
    if (M == 1) begin : g_one
      mvu #(.MW(KH * KW * C), .MH(CO), .SIMD(SIMD), .PE(PE), .PACK(PACK), .RQ_LUT(RQ_LUT), .W_STYLE(W_STYLE), .W_FILE(W_FILE), .B_FILE(B_FILE),
            .RQ_FILE(RQ_FILE)) unit (
          .clk(clk), .rst(rst), .s_axis_tvalid(wv), .s_axis_tready(wr), .s_axis_tdata(wd),
          .s_axis_tlast(wl), .m_axis_tvalid(m_axis_tvalid), .m_axis_tready(m_axis_tready),
          .m_axis_tdata(m_axis_tdata), .m_axis_tlast(m_axis_tlast)
      );
    end else begin : g_mmv
      logic [M-1:0] cv, cr, pv, pr, pl;
      logic [SIMD*8-1:0] cd;
      logic cl;
      logic [M*CO*8-1:0] pd;
      mmv_split #(.LANES(SIMD), .SF(KH * KW * C / SIMD), .M(M)) split (
          .clk(clk), .rst(rst), .s_axis_tvalid(wv), .s_axis_tready(wr), .s_axis_tdata(wd),
          .s_axis_tlast(wl), .m_axis_tvalid(cv), .m_axis_tready(cr), .m_axis_tdata(cd),
          .m_axis_tlast(cl)
      );
      for (genvar i = 0; i < M; i++) begin : g_copy
        logic ov, or_, ol;
        logic [PE*8-1:0] od;
        mvu #(.MW(KH * KW * C), .MH(CO), .SIMD(SIMD), .PE(PE), .PACK(PACK), .RQ_LUT(RQ_LUT), .W_STYLE(W_STYLE), .W_FILE(W_FILE), .B_FILE(B_FILE),
              .RQ_FILE(RQ_FILE)) unit (
            .clk(clk), .rst(rst), .s_axis_tvalid(cv[i]), .s_axis_tready(cr[i]), .s_axis_tdata(cd),
            .s_axis_tlast(cl), .m_axis_tvalid(ov), .m_axis_tready(or_), .m_axis_tdata(od),
            .m_axis_tlast(ol)
        );
        // the copy's NF beats of PE lanes -> one pixel of CO lanes
        dwc #(.IN(PE), .OUT(CO)) gather (
            .clk(clk), .rst(rst), .s_axis_tvalid(ov), .s_axis_tready(or_), .s_axis_tdata(od),
            .s_axis_tlast(ol), .m_axis_tvalid(pv[i]), .m_axis_tready(pr[i]),
            .m_axis_tdata(pd[i*CO*8+:CO*8]), .m_axis_tlast(pl[i])
        );
      end
      mmv_merge #(.LANES(CO), .M(M)) merge (
          .clk(clk), .rst(rst), .s_axis_tvalid(pv), .s_axis_tready(pr), .s_axis_tdata(pd),
          .s_axis_tlast(pl), .m_axis_tvalid(m_axis_tvalid), .m_axis_tready(m_axis_tready),
          .m_axis_tdata(m_axis_tdata), .m_axis_tlast(m_axis_tlast)
      );
    end
  endgenerate
endmodule
`default_nettype wire
