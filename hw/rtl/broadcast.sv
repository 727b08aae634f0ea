`default_nettype none
// Broadcast (fan-out) of one stream to N readers: every input beat goes to every output.
// Each output takes the beat when it is ready; the input beat is consumed once all outputs
// have taken it (a per-output "taken" flag lets fast readers move on without waiting for
// the others in the same cycle). No storage, no cycle of delay: readers are FIFOs.
// Outputs are packed: output i uses bit i of tvalid/tready/tlast and tdata[i*WIDTH +: WIDTH].
module broadcast #(
    parameter int WIDTH = 8,
    parameter int N     = 2
) (
    input  wire                  clk,
    input  wire                  rst,
    input  wire                  s_axis_tvalid,
    output logic                 s_axis_tready,
    input  wire  [WIDTH-1:0]     s_axis_tdata,
    input  wire                  s_axis_tlast,
    output logic [N-1:0]         m_axis_tvalid,
    input  wire  [N-1:0]         m_axis_tready,
    output logic [N*WIDTH-1:0]   m_axis_tdata,
    output logic [N-1:0]         m_axis_tlast
);
  initial begin
    if (N < 1) $error("broadcast: N=%0d must be positive", N);
    if (WIDTH < 1) $error("broadcast: WIDTH=%0d must be positive", WIDTH);
  end

  logic [N-1:0] taken;  // output i already took the current input beat

  always_comb begin
    m_axis_tvalid = {N{s_axis_tvalid}} & ~taken;
    m_axis_tdata = {N{s_axis_tdata}};
    m_axis_tlast = {N{s_axis_tlast}};
    s_axis_tready = &(taken | m_axis_tready);
  end

  always_ff @(posedge clk) begin
    if (rst || (s_axis_tvalid && s_axis_tready)) taken <= '0;
    else taken <= taken | (m_axis_tvalid & m_axis_tready);
  end
endmodule
`default_nettype wire
