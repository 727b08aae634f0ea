`default_nettype none
// One run's beats of an AXI4-Stream through a kernel boundary: at go it opens for
// frames*FRAME_BEATS beats and passes exactly those (valid/ready gated, data and tlast
// untouched), then closes until the next go. busy while beats are left.
module ctrl_count #(
    parameter int WIDTH       = 8,
    parameter int FRAME_BEATS = 4
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              go,
    input  wire  [31:0]      frames,
    output logic             busy,
    input  wire              s_axis_tvalid,
    output logic             s_axis_tready,
    input  wire  [WIDTH-1:0] s_axis_tdata,
    input  wire              s_axis_tlast,
    output logic             m_axis_tvalid,
    input  wire              m_axis_tready,
    output logic [WIDTH-1:0] m_axis_tdata,
    output logic             m_axis_tlast
);
  initial if (FRAME_BEATS < 1) $error("ctrl_count: FRAME_BEATS=%0d must be positive", FRAME_BEATS);

  logic [63:0] left;
  assign busy = left != '0;
  assign m_axis_tvalid = s_axis_tvalid && busy;
  assign s_axis_tready = m_axis_tready && busy;
  assign m_axis_tdata = s_axis_tdata;
  assign m_axis_tlast = s_axis_tlast;

  always_ff @(posedge clk) begin
    if (rst) left <= '0;
    else if (go) left <= 64'(frames) * 64'(FRAME_BEATS);
    else if (m_axis_tvalid && m_axis_tready) left <= left - 64'd1;
  end
endmodule
`default_nettype wire
