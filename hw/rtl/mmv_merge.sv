`default_nettype none
// Round-robin merge of M streams of whole beats (conv.sv with M > 1): one beat
// from input 0, then input 1, ... input M-1, forever (the counter is never reset at tlast,
// matching mmv_split's order across frames). Combinational: tlast is passed through.
module mmv_merge #(
    parameter int LANES = 4,
    parameter int M     = 2
) (
    input  wire                  clk,
    input  wire                  rst,
    input  wire  [M-1:0]         s_axis_tvalid,
    output logic [M-1:0]         s_axis_tready,
    input  wire  [M*LANES*8-1:0] s_axis_tdata,
    input  wire  [M-1:0]         s_axis_tlast,
    output logic                 m_axis_tvalid,
    input  wire                  m_axis_tready,
    output logic [LANES*8-1:0]   m_axis_tdata,
    output logic                 m_axis_tlast
);
  localparam int CW = M > 1 ? $clog2(M) : 1;
  initial begin
    if (M < 1 || LANES < 1) $error("mmv_merge: M=%0d and LANES=%0d must be positive", M, LANES);
  end

  logic [CW-1:0] cur;
  assign m_axis_tvalid = s_axis_tvalid[cur];
  assign m_axis_tdata = s_axis_tdata[32'(cur)*LANES*8+:LANES*8];
  assign m_axis_tlast = s_axis_tlast[cur];
  always_comb begin
    s_axis_tready = '0;
    s_axis_tready[cur] = m_axis_tready;
  end

  always_ff @(posedge clk) begin
    if (rst) cur <= '0;
    else if (m_axis_tvalid && m_axis_tready) cur <= cur == CW'(M - 1) ? '0 : cur + 1'b1;
  end
endmodule
`default_nettype wire
