`default_nettype none
// Off-chip buffer model with a barrier: the producer writes whole frames of FRAME_BEATS
// beats into one of NFRAMES frame slots; the consumer may read a frame only after the
// producer's last beat of it (the barrier). Memory bandwidth is shared: BYTES_PER_CYCLE
// bytes per cycle for writes and reads together (a beat costs LANES bytes), so a frame
// costs ceil(2*FRAME_BEATS*LANES / BYTES_PER_CYCLE) cycles when both sides are busy,
// and at most one beat per port per cycle: ii = max(beats, ceil(2*FRAME_BEATS*LANES/B)).
// BARRIER models the memory latency: a frame becomes readable BARRIER cycles after its
// last write (frames are double-buffered, so it adds to the latency, not to the ii).
module offchip_buffer #(
    parameter int LANES           = 2,
    parameter int FRAME_BEATS     = 16,
    parameter int BYTES_PER_CYCLE = 2,
    parameter int NFRAMES         = 2,
    parameter int BARRIER         = 0
) (
    input  wire                  clk,
    input  wire                  rst,
    input  wire                  s_axis_tvalid,
    output logic                 s_axis_tready,
    input  wire  [LANES*8-1:0]   s_axis_tdata,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire                  s_axis_tlast,  // frames are counted, not marked
    /* verilator lint_on UNUSEDSIGNAL */
    output logic                 m_axis_tvalid,
    input  wire                  m_axis_tready,
    output logic [LANES*8-1:0]   m_axis_tdata,
    output logic                 m_axis_tlast
);
  localparam int DEPTH = NFRAMES * FRAME_BEATS;
  localparam int AW = $clog2(DEPTH);
  localparam int BW = $clog2(FRAME_BEATS);
  localparam int FW = $clog2(NFRAMES + 1);
  localparam int CW = $clog2(2 * LANES + BYTES_PER_CYCLE + 1) + 1;
  localparam logic [CW-1:0] CAP = CW'(2 * LANES > BYTES_PER_CYCLE ? 2 * LANES : BYTES_PER_CYCLE);

  initial begin
    if (NFRAMES < 1 || FRAME_BEATS < 2) $error("offchip_buffer: NFRAMES=%0d FRAME_BEATS=%0d", NFRAMES, FRAME_BEATS);
    if (BYTES_PER_CYCLE < 1) $error("offchip_buffer: BYTES_PER_CYCLE=%0d must be positive", BYTES_PER_CYCLE);
  end

  logic [LANES*8-1:0] mem[DEPTH];
  logic [AW-1:0] wa, ra;
  logic [BW-1:0] wb, rb;
  logic [FW-1:0] used;   // frame slots being written or holding an unread frame
  logic [FW-1:0] ready;  // complete frames not yet fully read (the barrier count)
  logic [CW-1:0] cred;
  logic wr, rd, rd_want, wr_end, rd_end;

  // reads first, then writes, within the bandwidth credit
  assign rd_want = ready != '0 && (!m_axis_tvalid || m_axis_tready);
  assign rd = rd_want && cred >= CW'(LANES);
  assign s_axis_tready = (used < FW'(NFRAMES) || wb != '0)
                         && cred >= CW'(rd ? 2 * LANES : LANES);
  assign wr = s_axis_tvalid && s_axis_tready;
  assign wr_end = wr && wb == BW'(FRAME_BEATS - 1);
  assign rd_end = rd && rb == BW'(FRAME_BEATS - 1);

  always_ff @(posedge clk) begin
    if (wr) mem[wa] <= s_axis_tdata;
    if (rd) begin
      m_axis_tdata <= mem[ra];
      m_axis_tlast <= rb == BW'(FRAME_BEATS - 1);
    end
  end

  // the barrier: a frame's last write, BARRIER cycles later
  logic done;
  generate
    if (BARRIER == 0) begin : g_now
      assign done = wr_end;
    end else begin : g_later
      logic wait_q[BARRIER];  // a shift register of wr_end
      always_ff @(posedge clk) begin
        if (rst) for (int i = 0; i < BARRIER; i++) wait_q[i] <= 1'b0;
        else begin
          wait_q[0] <= wr_end;
          for (int i = 1; i < BARRIER; i++) wait_q[i] <= wait_q[i-1];
        end
      end
      assign done = wait_q[BARRIER-1];
    end
  endgenerate

  logic [CW-1:0] spent, cred_next;
  always_comb begin
    spent = (rd ? CW'(LANES) : '0) + (wr ? CW'(LANES) : '0);
    cred_next = cred - spent + CW'(BYTES_PER_CYCLE);
    if (cred_next > CAP) cred_next = CAP;
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      wa <= '0;
      ra <= '0;
      wb <= '0;
      rb <= '0;
      used <= '0;
      ready <= '0;
      cred <= CAP;
      m_axis_tvalid <= 1'b0;
    end else begin
      cred <= cred_next;
      if (wr) begin
        wa <= wa == AW'(DEPTH - 1) ? '0 : wa + 1'b1;
        wb <= wr_end ? '0 : wb + 1'b1;
      end
      if (rd) begin
        ra <= ra == AW'(DEPTH - 1) ? '0 : ra + 1'b1;
        rb <= rd_end ? '0 : rb + 1'b1;
      end
      // a slot is taken by a frame's first write and freed by its last read
      used <= used + FW'(wr && wb == '0) - FW'(rd_end);
      ready <= ready + FW'(done) - FW'(rd_end);
      if (rd) m_axis_tvalid <= 1'b1;
      else if (m_axis_tready) m_axis_tvalid <= 1'b0;
    end
  end
endmodule
`default_nettype wire
