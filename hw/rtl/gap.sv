`default_nettype none
// Global average pooling: the vvu summing over all H*W pixels of a frame (NHWC order is
// the window order with K = H*W), then requantising: B_FILE holds -H*W*z_x (or any int32
// bias'), RQ_FILE the per-channel {m, s} that fold 1/(H*W); with UNIFORM = 1 (what gen
// writes: the quantiser's pool has one zero point, multiplier and shift) B_CONST and RQ_CONST
// serve every channel and no memory holds them. Output: one pixel of
// C channels per frame, streamed during the frame's last input pixel; ii = H*W*C/P.
module gap #(
    parameter int C       = 4,
    parameter int P       = 2,
    parameter int H       = 4,
    parameter int W       = 4,
    parameter     B_FILE  = "",
    parameter     RQ_FILE = "",
    parameter int RQ_ZP   = 0,     // the requantisers' zero point and clamp, one for all channels
    parameter int RQ_LO   = -128,
    parameter int RQ_HI   = 127,
    parameter bit RQ_LUT  = 0,  // 1: the requantisers' products in LUTs (rq_lane.sv)
    parameter bit UNIFORM = 0,  // 1: B_CONST and RQ_CONST for every channel, no B_FILE/RQ_FILE
    parameter int B_CONST = 0,
    parameter logic [31:0] RQ_CONST = 32'd0,
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
  vvu #(.C(C), .P(P), .K(H * W), .MODE(2), .B_FILE(B_FILE), .RQ_FILE(RQ_FILE), .RQ_ZP(RQ_ZP), .RQ_LO(RQ_LO), .RQ_HI(RQ_HI), .RQ_LUT(RQ_LUT), .UNIFORM(UNIFORM), .B_CONST(B_CONST), .RQ_CONST(RQ_CONST)) unit (
      .clk(clk), .rst(rst), .s_axis_tvalid(s_axis_tvalid), .s_axis_tready(s_axis_tready),
      .s_axis_tdata(s_axis_tdata), .s_axis_tlast(s_axis_tlast), .m_axis_tvalid(m_axis_tvalid),
      .m_axis_tready(m_axis_tready), .m_axis_tdata(m_axis_tdata), .m_axis_tlast(m_axis_tlast)
  );
endmodule
`default_nettype wire
