`default_nettype none
// Global max pooling (bb::global_maxpool): the vvu's max mode over all H*W pixels of a
// frame (NHWC order is the window order with K = H*W); no constants, no requantisation.
// Output: one pixel of C channels per frame, streamed during the frame's last input pixel;
// ii = H*W*C/P.
module gmaxpool #(
    parameter int C = 4,
    parameter int P = 2,
    parameter int H = 4,
    parameter int W = 4
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              s_axis_tvalid,
    output logic             s_axis_tready,
    input  wire  [P*8-1:0]   s_axis_tdata,
    input  wire              s_axis_tlast,
    output logic             m_axis_tvalid,
    input  wire              m_axis_tready,
    output logic [P*8-1:0]   m_axis_tdata,
    output logic             m_axis_tlast
);
  vvu #(.C(C), .P(P), .K(H * W), .MODE(1)) unit (
      .clk(clk), .rst(rst), .s_axis_tvalid(s_axis_tvalid), .s_axis_tready(s_axis_tready),
      .s_axis_tdata(s_axis_tdata), .s_axis_tlast(s_axis_tlast), .m_axis_tvalid(m_axis_tvalid),
      .m_axis_tready(m_axis_tready), .m_axis_tdata(m_axis_tdata), .m_axis_tlast(m_axis_tlast)
  );
endmodule
`default_nettype wire
