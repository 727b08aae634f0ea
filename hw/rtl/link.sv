`default_nettype none
// Inter-core stream link: LINK_W bits per cycle, LATENCY cycles from a beat's handshake at
// s_axis to its first cycle valid on m_axis. A beat of WIDTH bits occupies the wire for
// ceil(WIDTH/LINK_W) cycles. Flow control is credit based: the receive FIFO has room for
// every beat in flight, so back-pressure never drops data.
module link #(
    parameter int WIDTH   = 8,
    parameter int LINK_W  = 8,
    parameter int LATENCY = 4
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              s_axis_tvalid,
    output logic             s_axis_tready,
    input  wire  [WIDTH-1:0] s_axis_tdata,
    input  wire              s_axis_tlast,
    output logic             m_axis_tvalid,
    input  wire              m_axis_tready,
    output logic [WIDTH-1:0] m_axis_tdata,
    output logic             m_axis_tlast
);
  localparam int BEAT_CYCLES = (WIDTH + LINK_W - 1) / LINK_W;
  localparam int D = LATENCY - 2;  // delay stages; the receive FIFO adds 2 cycles
  localparam int RX_DEPTH = D + 4;  // covers the credit round trip at one beat per cycle
  localparam int CW = $clog2(RX_DEPTH + 2) + 1;
  localparam int TW = BEAT_CYCLES > 1 ? $clog2(BEAT_CYCLES) : 1;

  initial begin
    if (LATENCY < 3) $error("link: LATENCY=%0d must be at least 3", LATENCY);
    if (LINK_W < 1) $error("link: LINK_W=%0d must be positive", LINK_W);
  end

  logic [WIDTH:0] pipe[D];
  logic [D-1:0] pv;
  logic [CW-1:0] credits;  // beats in flight or in the receive FIFO
  logic [TW-1:0] wait_cnt;
  logic send, pop, rx_ready;

  assign s_axis_tready = wait_cnt == '0 && credits < CW'(RX_DEPTH);
  assign send = s_axis_tvalid && s_axis_tready;
  assign pop = m_axis_tvalid && m_axis_tready;

  always_ff @(posedge clk) begin
    pipe[0] <= {s_axis_tlast, s_axis_tdata};
    for (int i = 1; i < D; i++) pipe[i] <= pipe[i-1];
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      pv <= '0;
      credits <= '0;
      wait_cnt <= '0;
    end else begin
      pv[0] <= send;
      for (int i = 1; i < D; i++) pv[i] <= pv[i-1];
      credits <= credits + CW'(send) - CW'(pop);
      if (send) wait_cnt <= TW'(BEAT_CYCLES - 1);
      else if (wait_cnt != '0) wait_cnt <= wait_cnt - 1'b1;
    end
  end

  fifo #(
      .WIDTH(WIDTH),
      .DEPTH(RX_DEPTH)
  ) rx (
      .clk(clk),
      .rst(rst),
      .s_axis_tvalid(pv[D-1]),
      .s_axis_tready(rx_ready),
      .s_axis_tdata(pipe[D-1][WIDTH-1:0]),
      .s_axis_tlast(pipe[D-1][WIDTH]),
      .m_axis_tvalid(m_axis_tvalid),
      .m_axis_tready(m_axis_tready),
      .m_axis_tdata(m_axis_tdata),
      .m_axis_tlast(m_axis_tlast)
  );

  // Credits guarantee room in the receive FIFO; rx_ready is always high when a beat lands.
  /* verilator lint_off UNUSEDSIGNAL */
  logic unused_ok;
  assign unused_ok = rx_ready;
  /* verilator lint_on UNUSEDSIGNAL */
endmodule
`default_nettype wire
