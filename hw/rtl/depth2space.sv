`default_nettype none
// DepthToSpace in DCR mode of an (H, W, C) stream at P lanes, block B (bb::depth2space; the
// sub-pixel form of a ConvTranspose whose kernel equals its stride): channel (i*B + j)*M + m of
// input pixel (y, x) is channel m of output pixel (y*B + i, x*B + j), M = C/(B*B). Two row
// buffers of RB = W*N words (N = C/P beats a pixel, P | M) as upsample.sv: the writer stores
// input rows into them in turn whenever one is free; the reader emits output row (y, i) from
// the row being written, for each x the B*M/P contiguous beats at (x*B*B + i*B)*M/P, one beat
// per cycle into the output register, chasing the writer (its addresses only grow within a
// pass). ii = H*W*C/P; first output 2 cycles after the first input (written, then read).
module depth2space #(
    // defaults divisible by 4, 9 and 16 at P = 1: a tool that sets the parameters one at a time
    // (Yosys chparam) meets no failing check on the way
    parameter int C = 144,
    parameter int P = 1,
    parameter int H = 2,
    parameter int W = 2,
    parameter int B = 2
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              s_axis_tvalid,
    output logic             s_axis_tready,
    input  wire  [P*8-1:0]   s_axis_tdata,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire              s_axis_tlast,  // the counters know the frame's end
    /* verilator lint_on UNUSEDSIGNAL */
    output logic             m_axis_tvalid,
    input  wire              m_axis_tready,
    output logic [P*8-1:0]   m_axis_tdata,
    output logic             m_axis_tlast
);
  localparam int N = C / P;            // beats of an input pixel
  localparam int NB = N / B;           // beats of one phase row's run: B*M/P
  localparam int RB = W * N;
  localparam int KW = NB > 1 ? $clog2(NB) : 1;
  localparam int XW = W > 1 ? $clog2(W) : 1;
  localparam int IW = B > 1 ? $clog2(B) : 1;
  localparam int YW = H > 1 ? $clog2(H) : 1;
  localparam int AW = $clog2(RB + 1);
  initial begin
    if (B < 1 || C % (B * B) != 0) $error("depth2space: B*B=%0d must divide C=%0d", B * B, C);
    if (P < 1 || (C / (B * B)) % P != 0) $error("depth2space: P=%0d must divide C/(B*B)=%0d", P, C / (B * B));
  end

  logic [P*8-1:0] mem[2 * RB];
  logic wsel;
  logic [AW-1:0] wa;
  logic [1:0] full;
  logic wfire;
  // reader: buffer rsel, address ra; k: beat of the pixel's run, x, phase row i, row y
  logic rsel;
  logic [AW-1:0] ra, base;
  logic [KW-1:0] k;
  logic [XW-1:0] x;
  logic [IW-1:0] i;
  logic [YW-1:0] y;
  logic avail, rfire, run_end, pass_end, row_end;

  assign s_axis_tready = !full[wsel];
  assign wfire = s_axis_tvalid && s_axis_tready;
  assign avail = full[rsel] || (wsel == rsel && wa > ra);
  assign rfire = avail && (!m_axis_tvalid || m_axis_tready);
  assign run_end = k == KW'(NB - 1);
  assign pass_end = run_end && x == XW'(W - 1);
  assign row_end = pass_end && i == IW'(B - 1);

  always_ff @(posedge clk) begin
    if (wfire) mem[{31'b0, wsel} * RB + int'(wa)] <= s_axis_tdata;
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      wsel <= 1'b0;
      wa <= '0;
      full <= '0;
      rsel <= 1'b0;
      ra <= '0;
      base <= '0;
      k <= '0;
      x <= '0;
      i <= '0;
      y <= '0;
      m_axis_tvalid <= 1'b0;
      m_axis_tlast <= 1'b0;
      m_axis_tdata <= '0;
    end else begin
      if (wfire) begin
        if (wa == AW'(RB - 1)) begin
          wa <= '0;
          full[wsel] <= 1'b1;
          wsel <= ~wsel;
        end else begin
          wa <= wa + 1'b1;
        end
      end
      if (rfire) begin
        m_axis_tvalid <= 1'b1;
        m_axis_tdata <= mem[{31'b0, rsel} * RB + int'(ra)];
        m_axis_tlast <= row_end && y == YW'(H - 1);
        if (!run_end) begin
          k <= k + 1'b1;
          ra <= ra + 1'b1;
        end else begin
          k <= '0;
          if (x != XW'(W - 1)) begin
            x <= x + 1'b1;
            ra <= ra + AW'(N - NB + 1);  // the next pixel's run of this phase row
          end else begin
            x <= '0;
            if (i != IW'(B - 1)) begin
              i <= i + 1'b1;
              ra <= base + AW'(NB);
              base <= base + AW'(NB);
            end else begin
              i <= '0;
              ra <= '0;
              base <= '0;
              y <= y == YW'(H - 1) ? '0 : y + 1'b1;
              full[rsel] <= 1'b0;  // the row's B phase rows are out: its buffer is free
              rsel <= ~rsel;
            end
          end
        end
      end else if (m_axis_tready) begin
        m_axis_tvalid <= 1'b0;
      end
    end
  end
endmodule
`default_nettype wire
