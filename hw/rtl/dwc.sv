`default_nettype none
// Width converter: IN int8 lanes per input beat to OUT lanes per output beat, through a
// buffer of IN + OUT lanes (lanes leave in arrival order; tlast rides on its lane). Moves
// min(IN, OUT) lanes per cycle at best, so ii = H*W*C/min(IN, OUT) (docs/hardware.md).
// The frame's lane count must be a multiple of lcm(IN, OUT).
module dwc #(
    parameter int IN  = 2,
    parameter int OUT = 4
) (
    input  wire                clk,
    input  wire                rst,
    input  wire                s_axis_tvalid,
    output logic               s_axis_tready,
    input  wire  [IN*8-1:0]    s_axis_tdata,
    input  wire                s_axis_tlast,
    output logic               m_axis_tvalid,
    input  wire                m_axis_tready,
    output logic [OUT*8-1:0]   m_axis_tdata,
    output logic               m_axis_tlast
);
  localparam int CAP = IN + OUT;
  localparam int NW = $clog2(CAP + 1);
  initial begin
    if (IN < 1 || OUT < 1) $error("dwc: IN=%0d and OUT=%0d must be positive", IN, OUT);
  end

  logic [CAP*8-1:0] buf_d, buf_n, buf_s;
  logic [CAP-1:0] lst, lst_n, lst_s;  // tlast flag per lane
  logic [NW-1:0] n, n_after;
  logic out_fire, in_fire;

  assign m_axis_tvalid = n >= NW'(OUT);
  assign m_axis_tdata = buf_d[OUT*8-1:0];
  assign m_axis_tlast = lst[OUT-1];
  assign out_fire = m_axis_tvalid && m_axis_tready;
  assign n_after = out_fire ? n - NW'(OUT) : n;
  assign s_axis_tready = 32'(n_after) + IN <= CAP;
  assign in_fire = s_axis_tvalid && s_axis_tready;

  always_comb begin
    buf_s = out_fire ? buf_d >> (OUT * 8) : buf_d;
    lst_s = out_fire ? lst >> OUT : lst;
    buf_n = buf_s;
    lst_n = lst_s;
    if (in_fire) begin
      for (int i = 0; i < CAP; i++) begin
        if (i >= int'(n_after) && i < int'(n_after) + IN) begin
          buf_n[8*i+:8] = s_axis_tdata[8*(i-int'(n_after))+:8];
          lst_n[i] = s_axis_tlast && i == int'(n_after) + IN - 1;
        end
      end
    end
  end

  always_ff @(posedge clk) begin
    buf_d <= buf_n;
    if (rst) begin
      n <= '0;
      lst <= '0;
    end else begin
      n <= n_after + (in_fire ? NW'(IN) : '0);
      lst <= lst_n;
    end
  end
endmodule
`default_nettype wire
