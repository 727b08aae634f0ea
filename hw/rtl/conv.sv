`default_nettype none
// Convolution: swg -> mvu (docs/hardware.md). The mvu's matrix is Co x (KH*KW*C), column
// k*C + c for tap k = ky*KW + kx, so W_FILE holds W[co][ky][kx][c] in mvu fold order.
// Padding inserts the input zero point PAD_VAL. A 1x1 kernel with stride 1 and no padding
// skips the window generator (PX = 1 only). SIMD | C, or SIMD = C*J with J | KH*KW (parallel
// window: the swg reads C lanes and emits J taps per beat).
// ii = max(Hp*Wp*C/min(SIMD, C), Ho*Wo*(K*C/SIMD)*(CO/PE)).
// Grouped (GROUPS > 1; M = 1, PX = 1): the matrix is Co x (KH*KW*C/GROUPS), row co over its
// group's window (ky, kx, c mod C/GROUPS); the swg emits a window group by group and the mvu
// takes a new vector at each group's first fold (NG = CO/GROUPS/PE folds a group). SIMD |
// C/GROUPS or C/GROUPS*J; input at min(SIMD, C/GROUPS) lanes; ii = max(Hp*Wp*C/LI,
// Ho*Wo*(K*C/GROUPS/SIMD)*(CO/PE)). WIDE (SIMD a multiple of C/GROUPS, a window generator):
// input at C lanes, the swg writing a pixel a cycle and slicing each group's channels out of
// the word it reads: ii = max(Hp*Wp, Ho*Wo*SF*NF).
// Pixel copies (M > 1, 1 <= M <= NF = CO/PE): M mvus with the same memories behind the one
// window generator; mmv_split deals the windows round robin (SF = K*C/SIMD beats each),
// a dwc per copy gathers its NF beats into one pixel of CO lanes and mmv_merge emits the
// pixels round robin, one CO-lane beat per pixel (output port CO*8 bits wide). Window w is
// first read at (w div M)*SF*NF + (w mod M)*SF when the swg is never starved (the 1x1 path
// without swg works the same), so
// ii = max(Hp*Wp*C/min(SIMD, C), Ho*Wo*SF*NF/M) on average (sim/expect.py mmv_conv).
// Paired input (PX = 2; SIMD >= C, W even): a beat carries two horizontally adjacent pixels
// (x = 2u in lanes [0, C), 2u+1 in [C, 2C)); the swg writes a padded column pair a cycle
// (swg.sv), so ii = max(Hp*ceil(Wp/2), Ho*Wo*SF*NF/M). With PO = 1 the output is as above.
// Paired output (PO = 2; PX = 2, SW = 1, Wo even, M even, 2 <= M, M/2 <= NF, PE | CO): two
// halves, each a window generator reading the paired input (a broadcast: a beat is taken
// when both writers take it) but emitting only its parity's windows (half h: ox = h, h+2, ...)
// followed by M/2 copies as above (mmv_split, mvus, dwc, mmv_merge; one copy too); a join
// emits pixel (oy, 2v) of half 0 in lanes [0, CO) and (oy, 2v+1) of half 1 in [CO, 2CO)
// (output port 2*CO*8 bits, tlast of half 0). Two generators rather than one with two
// reader ports: the same memory (a block RAM reads one address a port, so two readers need
// two copies of the rows either way), and each half is the PO = 1 path unchanged, whose
// timing the cost model already has; the halves run in lock step (same writes, same reads
// a row), so the join adds no cycle. The line buffers count twice (model/blocks.py mvu).
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
    parameter int RING    = 0,  // the window ring's rows if > 0 (swg.sv: a short ring)
    parameter int RING_URAM = 0,  // ring words an UltraRAM word holds, if > 0 (swg.sv)
    parameter     W_FILE  = "",
    parameter     W_STYLE = "block",  // weight ROM: "block" or "logic" (mvu.sv)
    parameter     B_FILE  = "",
    parameter     RQ_FILE = "",
    parameter int RQ_ZP   = 0,     // the requantisers' zero point and clamp, one for all channels
    parameter int RQ_LO   = -128,
    parameter int RQ_HI   = 127,
    parameter int M       = 1,
    parameter int PACK    = 1,  // 2: two output lanes per DSP48E2 (mvu.sv, mac2.sv)
    parameter bit RQ_LUT  = 0,  // 1: the requantisers' products in LUTs (rq_lane.sv)
    parameter int PX      = 1,  // input pixels per beat
    parameter int PO      = 1,  // output pixels per beat (2: two halves, M/2 copies each)
    parameter int GROUPS  = 1,  // a grouped conv: the groups in turn (swg.sv, mvu.sv NG)
    parameter bit WIDE    = 0,  // GROUPS > 1: whole pixels in (C lanes), each group a slice of the word
    // parallel window: SIMD = C*J (J taps of the window per beat), input at C lanes
    localparam int J  = SIMD > C / GROUPS ? SIMD / (C / GROUPS) : 1,
    localparam int LI = WIDE ? C : SIMD > C / GROUPS ? C / GROUPS : SIMD,
    localparam int LO = M > 1 || PO > 1 ? CO : PE
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 s_axis_tvalid,
    output logic                s_axis_tready,
    input  wire  [PX*LI*8-1:0]  s_axis_tdata,
    input  wire                 s_axis_tlast,
    output logic                m_axis_tvalid,
    input  wire                 m_axis_tready,
    output logic [PO*LO*8-1:0]  m_axis_tdata,
    output logic                m_axis_tlast
);
  initial begin
    if (SIMD > C / GROUPS && (SIMD % (C / GROUPS) != 0 || (KH * KW) % (SIMD / (C / GROUPS)) != 0))
      $error("conv: SIMD=%0d must divide C/GROUPS=%0d or be that times J with J dividing %0d", SIMD, C / GROUPS, KH * KW);
    if (GROUPS > 1 && (C % GROUPS != 0 || CO % (GROUPS * PE) != 0 || M != 1 || PX != 1))
      $error("conv: GROUPS=%0d must divide C and CO/PE, with M = 1 and PX = 1", GROUPS);
    if (WIDE && (GROUPS < 2 || SIMD % (C / GROUPS) != 0 || (KH * KW == 1 && SH == 1 && SW == 1
                 && PT + PL + PB + PR == 0)))
      $error("conv: WIDE needs GROUPS > 1, SIMD a multiple of C/GROUPS and a window generator");
    if (M < 1 || M > PO * (CO / PE)) $error("conv: M=%0d copies must be in 1..PO*CO/PE=%0d", M, PO * (CO / PE));
    if (PX != 1 && (PX != 2 || SIMD < C || W % 2 != 0))
      $error("conv: PX=%0d must be 1, or 2 with SIMD >= C and W even", PX);
    if (PO != 1 && (PO != 2 || PX != 2 || SW != 1 || WO % 2 != 0 || M % 2 != 0 || CO % PE != 0))
      $error("conv: PO=%0d must be 1, or 2 with PX = 2, SW = 1, Wo even, M even, PE | CO", PO);
  end
  localparam int WO = (W + PL + PR - (KW - 1) * DW - 1) / SW + 1;
  localparam int MH = M / PO;  // copies per half
  localparam bit DIRECT = KH == 1 && KW == 1 && SH == 1 && SW == 1 && PT + PL + PB + PR == 0 && PX == 1;
  logic [PO-1:0] ir, hv, hr, hl;  // per half: input ready; output valid, ready, last
  logic [PO*LO*8-1:0] hd;
  assign s_axis_tready = &ir;
  for (genvar h = 0; h < PO; h++) begin : g_half
    localparam logic [PO-1:0] SELF = PO'(1) << h;
    logic wv, wr, wl;
    logic [SIMD*8-1:0] wd;
    if (DIRECT) begin : g_direct
      assign wv = s_axis_tvalid;
      assign ir[h] = wr;
      assign wd = s_axis_tdata;
      assign wl = s_axis_tlast;
    end else begin : g_swg
      // a beat is taken when every half's writer takes it
      swg #(.C(C), .SIMD(LI), .J(J), .PX(PX), .OX0(PO > 1 ? h : 0), .OXS(PO), .GROUPS(GROUPS),
      .OL(WIDE ? C / GROUPS : LI),
      .H(H), .W(W), .KH(KH), .KW(KW), .SH(SH), .SW(SW), .DH(DH), .DW(DW),
      .PT(PT), .PL(PL), .PB(PB), .PR(PR), .PAD_VAL(PAD_VAL), .RING(RING), .RING_URAM(RING_URAM)
      ) win (
      .clk(clk), .rst(rst), .s_axis_tvalid(s_axis_tvalid && &(ir | SELF)), .s_axis_tready(ir[h]),
      .s_axis_tdata(s_axis_tdata), .s_axis_tlast(s_axis_tlast), .m_axis_tvalid(wv),
      .m_axis_tready(wr), .m_axis_tdata(wd), .m_axis_tlast(wl)
      );
    end
    if (M == 1 && PO == 1) begin : g_one
      mvu #(.MW(KH * KW * C / GROUPS), .MH(CO), .SIMD(SIMD), .PE(PE), .NG(CO / GROUPS / PE), .PACK(PACK), .RQ_LUT(RQ_LUT), .W_STYLE(W_STYLE), .W_FILE(W_FILE), .B_FILE(B_FILE),
            .RQ_FILE(RQ_FILE), .RQ_ZP(RQ_ZP), .RQ_LO(RQ_LO), .RQ_HI(RQ_HI)) unit (
          .clk(clk), .rst(rst), .s_axis_tvalid(wv), .s_axis_tready(wr), .s_axis_tdata(wd),
          .s_axis_tlast(wl), .m_axis_tvalid(hv[h]), .m_axis_tready(hr[h]),
          .m_axis_tdata(hd[h*LO*8+:LO*8]), .m_axis_tlast(hl[h])
      );
    end else begin : g_mmv
      logic [MH-1:0] cv, cr, pv, pr, pl;
      logic [SIMD*8-1:0] cd;
      logic cl;
      logic [MH*CO*8-1:0] pd;
      mmv_split #(.LANES(SIMD), .SF(KH * KW * C / SIMD), .M(MH)) split (
          .clk(clk), .rst(rst), .s_axis_tvalid(wv), .s_axis_tready(wr), .s_axis_tdata(wd),
          .s_axis_tlast(wl), .m_axis_tvalid(cv), .m_axis_tready(cr), .m_axis_tdata(cd),
          .m_axis_tlast(cl)
      );
      for (genvar i = 0; i < MH; i++) begin : g_copy
        logic ov, or_, ol;
        logic [PE*8-1:0] od;
        mvu #(.MW(KH * KW * C / GROUPS), .MH(CO), .SIMD(SIMD), .PE(PE), .NG(CO / GROUPS / PE), .PACK(PACK), .RQ_LUT(RQ_LUT), .W_STYLE(W_STYLE), .W_FILE(W_FILE), .B_FILE(B_FILE),
              .RQ_FILE(RQ_FILE), .RQ_ZP(RQ_ZP), .RQ_LO(RQ_LO), .RQ_HI(RQ_HI)) unit (
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
      mmv_merge #(.LANES(CO), .M(MH)) merge (
          .clk(clk), .rst(rst), .s_axis_tvalid(pv), .s_axis_tready(pr), .s_axis_tdata(pd),
          .s_axis_tlast(pl), .m_axis_tvalid(hv[h]), .m_axis_tready(hr[h]),
          .m_axis_tdata(hd[h*LO*8+:LO*8]), .m_axis_tlast(hl[h])
      );
    end
  end
  // the join: a beat when every half has its pixel (PO = 1: half 0 passes through)
  assign m_axis_tvalid = &hv;
  assign m_axis_tdata = hd;
  assign m_axis_tlast = hl[0];
  for (genvar h = 0; h < PO; h++) begin : g_join
    localparam logic [PO-1:0] SELF = PO'(1) << h;
    assign hr[h] = m_axis_tready && &(hv | SELF);
  end
  /* verilator lint_off UNUSEDSIGNAL */  // half 1's tlast: the same frame's end as half 0's
  logic unused_last;
  assign unused_last = ^hl;
  /* verilator lint_on UNUSEDSIGNAL */
endmodule
`default_nettype wire
