`default_nettype none
// Banded off-chip conv (docs/rtl.md, "band_split and conv_band"; model bbgrap_hls/model/band.py
// `banded`): conv_offchip's parameters and ports plus BANDS. The frame's HO output rows are
// computed R = HO/BANDS at a time: band_split re-emits the input as BANDS band frames of
// HB = (R-1)*SH + KHE rows (top and bottom padding as padding rows, shared rows replayed, rows no
// band reads dropped) and conv_offchip (H = HB, PT = PB = 0) computes each as a frame; its frame
// slots hold a band and each weight is read once per band. m_axis_tlast marks the last beat of a
// frame's last band. BANDS = 1: conv_offchip itself.
module conv_band #(
    parameter int C       = 4,
    parameter int CO      = 8,
    parameter int SIMD    = 2,
    parameter int PE      = 4,
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
    parameter     B_FILE  = "",
    parameter     RQ_FILE = "",
    parameter int RQ_ZP   = 0,     // the requantisers' zero point and clamp, one for all channels
    parameter int RQ_LO   = -128,
    parameter int RQ_HI   = 127,
    parameter int DATA_W  = 128,
    parameter int ADDR_W  = 32,
    parameter logic [63:0] W_BASE = 0,
    parameter int ISLOTS  = 2,   // frame slots of the input buffer: 1 or 2
    parameter int OSLOTS  = 2,   // frame slots of the output buffer: 1 or 2
    parameter int PACK    = 1,   // conv_offchip's DSP packing: 2 or 1
    parameter int BANDS   = 1    // bands of output rows a frame (divides HO)
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 s_axis_tvalid,
    output logic                s_axis_tready,
    input  wire  [SIMD*8-1:0]   s_axis_tdata,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire                 s_axis_tlast,  // frames are counted, not marked
    /* verilator lint_on UNUSEDSIGNAL */
    output logic                m_axis_tvalid,
    input  wire                 m_axis_tready,
    output logic [PE*8-1:0]     m_axis_tdata,
    output logic                m_axis_tlast,
    output logic [ADDR_W-1:0]   m_axi_araddr,
    output logic [7:0]          m_axi_arlen,
    output logic [2:0]          m_axi_arsize,
    output logic [1:0]          m_axi_arburst,
    output logic                m_axi_arvalid,
    input  wire                 m_axi_arready,
    input  wire  [DATA_W-1:0]   m_axi_rdata,
    input  wire  [1:0]          m_axi_rresp,
    input  wire                 m_axi_rlast,
    input  wire                 m_axi_rvalid,
    output logic                m_axi_rready
);
  localparam int KHE = (KH - 1) * DH + 1;
  localparam int HO = (H + PT + PB - KHE) / SH + 1;
  localparam int R = HO / BANDS;               // output rows per band
  localparam int HB = (R - 1) * SH + KHE;      // input rows per band

  initial begin
    if (BANDS < 1 || HO % BANDS != 0) $error("conv_band: BANDS=%0d must divide HO=%0d", BANDS, HO);
  end

  generate
    if (BANDS == 1) begin : g_whole
      conv_offchip #(.C(C), .CO(CO), .SIMD(SIMD), .PE(PE), .H(H), .W(W), .KH(KH), .KW(KW), .SH(SH),
                     .SW(SW), .DH(DH), .DW(DW), .PT(PT), .PL(PL), .PB(PB), .PR(PR), .PAD_VAL(PAD_VAL),
                     .B_FILE(B_FILE), .RQ_FILE(RQ_FILE), .RQ_ZP(RQ_ZP), .RQ_LO(RQ_LO), .RQ_HI(RQ_HI), .DATA_W(DATA_W), .ADDR_W(ADDR_W),
                     .W_BASE(W_BASE), .ISLOTS(ISLOTS), .OSLOTS(OSLOTS), .PACK(PACK)) conv (.*);
    end else begin : g_bands
      logic b_tvalid, b_tready, c_tlast;
      logic [SIMD*8-1:0] b_tdata;
      logic [$clog2(BANDS)-1:0] band;  // band of the frame leaving
      band_split #(.H(H), .W(W), .C(C), .LANES(SIMD), .KH(KHE), .SH(SH), .PT(PT), .HO(HO),
                   .BANDS(BANDS), .PAD_VAL(PAD_VAL)) split (
          .clk(clk), .rst(rst), .s_axis_tvalid(s_axis_tvalid), .s_axis_tready(s_axis_tready),
          .s_axis_tdata(s_axis_tdata), .s_axis_tlast(s_axis_tlast), .m_axis_tvalid(b_tvalid),
          .m_axis_tready(b_tready), .m_axis_tdata(b_tdata)
      );
      conv_offchip #(.C(C), .CO(CO), .SIMD(SIMD), .PE(PE), .H(HB), .W(W), .KH(KH), .KW(KW), .SH(SH),
                     .SW(SW), .DH(DH), .DW(DW), .PT(0), .PL(PL), .PB(0), .PR(PR), .PAD_VAL(PAD_VAL),
                     .B_FILE(B_FILE), .RQ_FILE(RQ_FILE), .RQ_ZP(RQ_ZP), .RQ_LO(RQ_LO), .RQ_HI(RQ_HI), .DATA_W(DATA_W), .ADDR_W(ADDR_W),
                     .W_BASE(W_BASE), .ISLOTS(ISLOTS), .OSLOTS(OSLOTS), .PACK(PACK)) conv (
          .clk(clk), .rst(rst), .s_axis_tvalid(b_tvalid), .s_axis_tready(b_tready),
          .s_axis_tdata(b_tdata), .s_axis_tlast(1'b0), .m_axis_tvalid(m_axis_tvalid),
          .m_axis_tready(m_axis_tready), .m_axis_tdata(m_axis_tdata), .m_axis_tlast(c_tlast),
          .m_axi_araddr(m_axi_araddr), .m_axi_arlen(m_axi_arlen), .m_axi_arsize(m_axi_arsize),
          .m_axi_arburst(m_axi_arburst), .m_axi_arvalid(m_axi_arvalid), .m_axi_arready(m_axi_arready),
          .m_axi_rdata(m_axi_rdata), .m_axi_rresp(m_axi_rresp), .m_axi_rlast(m_axi_rlast),
          .m_axi_rvalid(m_axi_rvalid), .m_axi_rready(m_axi_rready)
      );
      // a frame's tlast: the last beat of its last band
      assign m_axis_tlast = c_tlast && 32'(band) == BANDS - 1;
      always_ff @(posedge clk) begin
        if (rst) band <= '0;
        else if (m_axis_tvalid && m_axis_tready && c_tlast)
          band <= 32'(band) == BANDS - 1 ? '0 : band + 1'b1;
      end
    end
  endgenerate
endmodule
`default_nettype wire
