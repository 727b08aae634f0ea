`default_nettype none
// Round-robin demultiplexer of vectors over M copies (conv.sv with M > 1): the
// SF beats of a vector go to copy `cur`; after a vector's SF-th beat, cur = (cur + 1) mod M.
// The counters run on across frames (never reset at tlast), so frames interleave round
// robin. Combinational: a copy sees the input beat in the same cycle (data and tlast are
// wired to every copy, tvalid only to copy `cur`; tready is copy `cur`'s).
module mmv_split #(
    parameter int LANES = 2,
    parameter int SF    = 3,
    parameter int M     = 2
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 s_axis_tvalid,
    output logic                s_axis_tready,
    input  wire  [LANES*8-1:0]  s_axis_tdata,
    input  wire                 s_axis_tlast,
    output logic [M-1:0]        m_axis_tvalid,
    input  wire  [M-1:0]        m_axis_tready,
    output logic [LANES*8-1:0]  m_axis_tdata,
    output logic                m_axis_tlast
);
  localparam int BW = SF > 1 ? $clog2(SF) : 1;
  localparam int CW = M > 1 ? $clog2(M) : 1;
  initial begin
    if (SF < 1 || M < 1) $error("mmv_split: SF=%0d and M=%0d must be positive", SF, M);
  end

  logic [BW-1:0] beat;
  logic [CW-1:0] cur;
  logic fire;
  assign s_axis_tready = m_axis_tready[cur];
  assign fire = s_axis_tvalid && s_axis_tready;
  assign m_axis_tdata = s_axis_tdata;
  assign m_axis_tlast = s_axis_tlast;
  always_comb begin
    m_axis_tvalid = '0;
    m_axis_tvalid[cur] = s_axis_tvalid;
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      beat <= '0;
      cur <= '0;
    end else if (fire) begin
      if (beat == BW'(SF - 1)) begin
        beat <= '0;
        cur <= cur == CW'(M - 1) ? '0 : cur + 1'b1;
      end else begin
        beat <= beat + 1'b1;
      end
    end
  end
endmodule
`default_nettype wire
