`default_nettype none
// Max pooling: swg (padding -128, never above the maximum) -> vvu (max); no constants.
// ii = max(Hp*Wp*C/P, Ho*Wo*K*C/(P*J)) (docs/hardware.md).
module maxpool #(
    parameter int C       = 4,
    parameter int P       = 2,
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
    parameter int PAD_VAL = -128,
    parameter int J       = 1,  // parallel window: J taps a beat (J | KH*KW; swg.sv, vvu.sv)
    parameter int RING    = 0,  // the window ring's rows if > 0 (swg.sv: a short ring)
    parameter int RING_URAM = 0,  // ring words an UltraRAM word holds, if > 0 (swg.sv)
    parameter     W_FILE  = "",
    parameter     B_FILE  = "",
    parameter     RQ_FILE = "",
    parameter int RQ_ZP   = 0,     // the requantisers' zero point and clamp, one for all channels
    parameter int RQ_LO   = -128,
    parameter int RQ_HI   = 127,
    localparam int LI = P,
    localparam int LO = P
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
  logic wv, wr, wl;
  logic [J*P*8-1:0] wd;
  swg #(.C(C), .SIMD(P),
      .H(H), .W(W), .KH(KH), .KW(KW), .SH(SH), .SW(SW), .DH(DH), .DW(DW),
      .PT(PT), .PL(PL), .PB(PB), .PR(PR), .PAD_VAL(PAD_VAL), .RING(RING), .RING_URAM(RING_URAM), .J(J)
  ) win (
      .clk(clk), .rst(rst), .s_axis_tvalid(s_axis_tvalid), .s_axis_tready(s_axis_tready),
      .s_axis_tdata(s_axis_tdata), .s_axis_tlast(s_axis_tlast), .m_axis_tvalid(wv),
      .m_axis_tready(wr), .m_axis_tdata(wd), .m_axis_tlast(wl)
  );
  vvu #(.C(C), .P(P), .K(KH * KW), .MODE(1), .J(J), .W_FILE(W_FILE), .B_FILE(B_FILE), .RQ_FILE(RQ_FILE), .RQ_ZP(RQ_ZP), .RQ_LO(RQ_LO), .RQ_HI(RQ_HI)) unit (
      .clk(clk), .rst(rst), .s_axis_tvalid(wv), .s_axis_tready(wr), .s_axis_tdata(wd),
      .s_axis_tlast(wl), .m_axis_tvalid(m_axis_tvalid), .m_axis_tready(m_axis_tready),
      .m_axis_tdata(m_axis_tdata), .m_axis_tlast(m_axis_tlast)
  );
endmodule
`default_nettype wire
