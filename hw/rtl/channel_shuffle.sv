`default_nettype none
// Channel permutation inside every pixel (bb::channel_shuffle): output channel k of a pixel is
// input channel perm[k]. P lanes, N = C/P beats per pixel. The pixel is written into one of
// two register banks (C bytes each) while the other bank is read out, so a pixel's N output
// beats leave during the next pixel's N input beats: one beat per cycle in and out,
// ii = H*W*C/P. The reader starts a pixel the cycle after its last input beat and registers
// its output: a pixel's output beat j leaves N + 1 + j cycles after its first input beat.
// PERM: C indices of 16 bits, perm[k] at PERM[16*k +: 16]. A constant: output lane i of beat
// k is wired to byte perm[k*P + i] of the banks, so each output bit is a 2N:1 multiplexer
// (bank, beat) and no crossbar. tlast: the input's tlast on a pixel's last beat is kept with
// the bank and given to that pixel's last output beat.
module channel_shuffle #(
    parameter int           C    = 4,
    parameter int           P    = 2,
    parameter logic [C*16-1:0] PERM = '0
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
  localparam int N = C / P;
  localparam int NW = N > 1 ? $clog2(N) : 1;
  localparam int CW = C > 1 ? $clog2(C) : 1;
  localparam logic [NW-1:0] LAST = NW'(N - 1);
  initial begin
    if (P < 1 || C % P != 0) $error("channel_shuffle: P=%0d must divide C=%0d", P, C);
  end
  for (genvar k = 0; k < C; k++) begin : g_check
    if (int'(PERM[16*k+:16]) >= C) begin : g_bad
      initial $error("channel_shuffle: PERM[%0d]=%0d is no channel of C=%0d", k, PERM[16*k+:16], C);
    end
  end
  /* verilator lint_off UNUSEDSIGNAL */  // bytes no PERM entry names (PERM repeating a channel)
  logic [2*C*8-1:0] px;   // the two pixel banks, byte c of bank b at px[8*(b*C + c) +: 8]
  /* verilator lint_on UNUSEDSIGNAL */
  logic [1:0] full;       // bank holds a complete pixel not yet read out
  logic [1:0] plast;      // the pixel in the bank ends a frame
  logic wb, rb;           // bank being written / read
  logic [NW-1:0] wc, rc;  // beat of the pixel being written / read
  logic wr, ld;
  logic [P*8-1:0] cand[2][N];  // output beat k of each bank, wired by PERM

  assign s_axis_tready = !full[wb];
  assign wr = s_axis_tvalid && s_axis_tready;
  assign ld = full[rb] && (!m_axis_tvalid || m_axis_tready);
  for (genvar b = 0; b < 2; b++) begin : g_bank
    for (genvar k = 0; k < N; k++) begin : g_beat
      for (genvar i = 0; i < P; i++) begin : g_lane
        assign cand[b][k][8*i+:8] = px[8*(b*C+int'(PERM[16*(k*P+i)+:CW]))+:8];
      end
    end
  end

  always_ff @(posedge clk) begin
    // constant part-selects (registers with enables, no write-port decoding)
    for (int b = 0; b < 2; b++) begin
      for (int k = 0; k < N; k++) begin
        if (wr && int'(wb) == b && int'(wc) == k) px[8*(b*C+k*P)+:8*P] <= s_axis_tdata;
      end
    end
    if (ld) begin
      m_axis_tdata <= cand[rb][rc];
      m_axis_tlast <= plast[rb] && rc == LAST;
    end
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      full <= '0;
      plast <= '0;
      wb <= 1'b0;
      rb <= 1'b0;
      wc <= '0;
      rc <= '0;
      m_axis_tvalid <= 1'b0;
    end else begin
      if (wr) begin
        wc <= wc == LAST ? '0 : wc + 1'b1;
        if (wc == LAST) begin
          full[wb] <= 1'b1;
          plast[wb] <= s_axis_tlast;
          wb <= !wb;
        end
      end
      if (ld) begin
        rc <= rc == LAST ? '0 : rc + 1'b1;
        if (rc == LAST) begin
          full[rb] <= 1'b0;
          rb <= !rb;
        end
      end
      if (ld) m_axis_tvalid <= 1'b1;
      else if (m_axis_tready) m_axis_tvalid <= 1'b0;
    end
  end
endmodule
`default_nettype wire
