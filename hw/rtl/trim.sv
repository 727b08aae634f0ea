`default_nettype none
// Trimming width converter (padded folds): a matrix-vector unit whose IN (= PE) lanes do not
// divide its CO channels writes NF = ceil(CO/IN) beats a pixel, the last one with only LAST
// real lanes; this drops the padding lanes and streams the pixel's CO = (NF-1)*IN + LAST
// channels as CO/OUT beats of OUT lanes (OUT | CO, OUT >= IN).
// A pixel buffer of NF*IN lanes: input beat j of a pixel is written to lanes [j*IN, (j+1)*IN)
// (no input multiplexer), output beat k is lanes [k*OUT, (k+1)*OUT) (a CO/OUT-way multiplexer
// per output bit). Output beat k leaves once the folds it needs are in (NEED); the next
// pixel's beat j is written once the output beats reading its lanes have left (FREE), so the
// input is never stalled without back-pressure: ii = NF beats a pixel; an output beat leaves
// the cycle after the input beat that completes it.
// Without padding (LAST = IN) it is also the width converter between lane counts of which one
// divides the other (codegen/rtl.py; dwc.sv takes the others): widening, NF = OUT/IN beats
// written side by side, one output beat (no multiplexer at all); narrowing, NF = 1 and
// OUT < IN allowed, one input word read out as IN/OUT beats, the next word written as its
// last beat leaves (ii = one output beat a cycle).
module trim #(
    parameter int IN   = 3,
    parameter int OUT  = 4,
    parameter int NF   = 3,
    parameter int LAST = 2
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
  localparam int CO = (NF - 1) * IN + LAST;
  localparam int KB = CO / OUT;  // output beats a pixel
  localparam int JW = NF > 1 ? $clog2(NF) : 1;
  localparam int KW = KB > 1 ? $clog2(KB) : 1;
  initial begin
    if (IN < 1 || NF < 1 || LAST < 1 || LAST > IN || CO % OUT != 0 || (OUT < IN && (NF != 1 || LAST != IN)))
      $error("trim: IN=%0d, OUT=%0d, NF=%0d, LAST=%0d: need 1 <= LAST <= IN, OUT | CO, and IN <= OUT unless NF = 1, LAST = IN",
             IN, OUT, NF, LAST);
  end

  // folds an output beat needs, and output beats that must have left before a fold is rewritten
  function automatic integer need(input integer k);
    need = (k + 1) * OUT > (NF - 1) * IN ? NF : ((k + 1) * OUT + IN - 1) / IN;
  endfunction
  function automatic integer free_(input integer j);
    free_ = ((j + 1) * IN < CO ? (j + 1) * IN : CO) / OUT + (((j + 1) * IN < CO ? (j + 1) * IN : CO) % OUT != 0);
  endfunction

  logic [NF*IN*8-1:0] buf_q;
  logic [JW-1:0] j;      // next input fold of the input pixel
  logic [KW-1:0] k;      // next output beat of the output pixel
  logic ahead;           // the input is on the pixel after the output's (the output's is complete)
  logic olast;           // the output pixel is the frame's last
  logic in_fire, out_fire, out_done, in_done;
  logic [JW:0] avail;    // folds of the output pixel written
  logic [KW:0] sent;     // output beats of the output pixel gone, this cycle's included
  logic [JW:0] need_k;
  logic [KW:0] free_j;

  always_comb begin
    need_k = '0;
    for (int x = 0; x < KB; x++) if (32'(k) == x) need_k = (JW + 1)'(need(x));
    free_j = '0;
    for (int x = 0; x < NF; x++) if (32'(j) == x) free_j = (KW + 1)'(free_(x));
  end
  assign avail = ahead ? (JW + 1)'(NF) : {1'b0, j};
  assign m_axis_tvalid = avail >= need_k;
  assign out_fire = m_axis_tvalid && m_axis_tready;
  assign out_done = out_fire && 32'(k) == KB - 1;
  assign sent = {1'b0, k} + (KW + 1)'(out_fire);
  assign s_axis_tready = !ahead || sent >= free_j;
  assign in_fire = s_axis_tvalid && s_axis_tready;
  assign in_done = in_fire && 32'(j) == NF - 1;
  assign m_axis_tlast = olast && 32'(k) == KB - 1;
  if (KB == 1) begin : g_one  // one beat a pixel (widening): the buffer is the output, no multiplexer
    assign m_axis_tdata = buf_q[OUT*8-1:0];
  end else begin : g_mux
    always_comb begin
      m_axis_tdata = '0;
      for (int x = 0; x < KB; x++) if (32'(k) == x) m_axis_tdata = buf_q[x*OUT*8+:OUT*8];
    end
  end

  always_ff @(posedge clk) begin
    for (int x = 0; x < NF; x++) if (in_fire && 32'(j) == x) buf_q[x*IN*8+:IN*8] <= s_axis_tdata;
    if (rst) begin
      j <= '0;
      k <= '0;
      ahead <= 1'b0;
      olast <= 1'b0;
    end else begin
      if (in_fire) j <= in_done ? '0 : j + 1'b1;
      if (out_fire) k <= out_done ? '0 : k + 1'b1;
      ahead <= (ahead && !out_done) || in_done;
      // the input completes a pixel only while the output is on it (or finishing the one before)
      if (in_done) olast <= s_axis_tlast;
      else if (out_done) olast <= 1'b0;
    end
  end
endmodule
`default_nettype wire
