`default_nettype none
// LRN across channels (bb::lrn, ops/lrn.py, docs/numerics.md "LRN"). P lanes, N = C/P beats
// per pixel. As channel_shuffle: the pixel is written into one of two banks while the other is
// read out, one beat per cycle in and out, ii = H*W*C/P. A bank holds the pixel's
// d = x - ZP_IN (9 bits) and the prefix sums of squares pre[k] = d_0^2 + ... + d_(k-1)^2
// (SW bits, modulo 2^SW: a window's sum, at most 63*255^2 < 2^22, is their exact difference),
// accumulated as the beats come in. The reader starts a pixel the cycle after its last input
// beat; stage 1: per lane S = pre[min(c+AFTER+1, C)] - pre[max(c-BEFORE, 0)], its code
// t*2^MBITS + (S >> t) with t = max(bitlen(S) - 1 - MBITS, 0), the table word T and d
// registered; stage 2: y = clamp(ZP_OUT + ((d*T + 2^(SHIFT-1)) >>> SHIFT), -128, 127) into the
// output register. Output beat j of a pixel leaves N + 2 + j cycles after its first input beat.
// TAB_FILE ($readmemh): ENTRIES words of 16 bits (unsigned), ops/lrn.py `table`. tlast: the
// input's tlast on a pixel's last beat is kept with the bank and given to its last output beat.
module lrn #(
    parameter int C       = 4,
    parameter int P       = 2,
    parameter int BEFORE  = 1,
    parameter int AFTER   = 1,
    parameter int MBITS   = 6,
    parameter int SHIFT   = 15,
    parameter int ZP_IN   = 0,
    parameter int ZP_OUT  = 0,
    parameter int ENTRIES = 1024,
    parameter     TAB_FILE = ""
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
  localparam int SW = 22;  // prefix sums modulo 2^22
  localparam int IW = ENTRIES > 1 ? $clog2(ENTRIES) : 1;
  localparam logic [NW-1:0] LAST = NW'(N - 1);
  initial begin
    if (P < 1 || C % P != 0) $error("lrn: P=%0d must divide C=%0d", P, C);
    if (BEFORE + AFTER + 1 > 63) $error("lrn: window %0d exceeds 63 channels", BEFORE + AFTER + 1);
    if (SHIFT < 0 || SHIFT > 40) $error("lrn: SHIFT=%0d outside 0..40", SHIFT);
  end

  function automatic logic [IW-1:0] code_of(input logic [SW-1:0] s);
    int bl, t;
    logic [SW-1:0] m;
    bl = 0;
    for (int b = 0; b < SW; b++) if (s[b]) bl = b + 1;
    t = bl - 1 - MBITS > 0 ? bl - 1 - MBITS : 0;
    m = s >> t;
    code_of = IW'((t << MBITS) + int'(m));
  endfunction

  // Banks as rows of P, row r written whole by beat r of the pixel: d of its channels, and the
  // prefix sums pre[k] for k = r*P+1 .. r*P+P (pre[0] = 0 is not stored). A row is one word, so
  // the banks are memories with one write port, read by lane i at rows rc + const (its window
  // bounds c + AFTER + 1 and c - BEFORE, c = rc*P + i) and a constant column: distributed RAM
  // in Yosys. (Indexed by the flat channel, Yosys built flip-flops behind a 2(C+1)-input
  // multiplexer for every lane and bit: C 64, P 8 took 29,521 LUTs, now 1,652.)
  logic [P-1:0][8:0] dv[2][N];      // d of every channel, per bank
  logic [P-1:0][SW-1:0] pre[2][N];  // pre[b][r][j] = prefix sum k = r*P + j + 1
  logic [P-1:0][8:0] dvrow;         // the row this beat writes
  logic [P-1:0][SW-1:0] prerow;
  logic [1:0] full;                 // bank holds a complete pixel not yet read out
  logic [1:0] plast;                // the pixel in the bank ends a frame
  logic wb, rb;                     // bank being written / read
  logic [NW-1:0] wc, rc;            // beat of the pixel being written / read
  logic wr, ld, en;
  logic [SW-1:0] base;              // pre[wb][wc*P]: the sum of the pixel's earlier beats
  logic [SW-1:0] run[P+1];          // this beat's prefix sums
  logic signed [8:0] din[P];
  logic signed [17:0] sq[P];        // d^2 <= 65025
  // stage 1
  logic v1, last1;
  logic signed [8:0] d1[P];
  logic [15:0] t1[P];

  assign s_axis_tready = !full[wb];
  assign wr = s_axis_tvalid && s_axis_tready;
  assign en = !m_axis_tvalid || m_axis_tready;
  assign ld = full[rb] && en;

  always_comb begin
    run[0] = base;
    for (int i = 0; i < P; i++) begin
      din[i] = 9'(signed'(s_axis_tdata[8*i+:8])) - 9'(ZP_IN);
      sq[i] = 18'(din[i]) * 18'(din[i]);
      run[i+1] = run[i] + SW'(sq[i]);
      dvrow[i] = din[i];
      prerow[i] = run[i+1];
    end
  end

  // Per lane the table's address, the code of the window's sum S = pre[min(c+AFTER+1, C)] -
  // pre[max(c-BEFORE, 0)], read in the stage-1 register from one copy of the factor table per
  // lane, in block RAM (a RAMB18 holds 1,024 x 18 bits; the cost model counts one per lane).
  logic [IW-1:0] addr[P];
  for (genvar i = 0; i < P; i++) begin : g_lane
    localparam int HI = i + AFTER + 1;  // upper bound, relative to rc*P: stored at HI - 1
    localparam int HR = (HI - 1) / P;
    localparam int HC = (HI - 1) % P;
    localparam int LO = i - BEFORE;  // lower bound, relative to rc*P: stored at LO - 1 (floor division)
    localparam int LR = LO - 1 >= 0 ? (LO - 1) / P : -((P - LO) / P);
    localparam int LC = LO - 1 - LR * P;
    logic [SW-1:0] phi, plo;
    always_comb begin
      phi = int'(rc) * P + HI >= C ? pre[rb][N-1][P-1] : pre[rb][int'(rc)+HR][HC];
      plo = int'(rc) * P + LO <= 0 ? '0 : pre[rb][int'(rc)+LR][LC];
    end
    assign addr[i] = code_of(phi - plo);

    /* verilator lint_off UNDRIVEN */  // ROM: filled by $readmemh only
    (* rom_style = "block" *)
    logic [15:0] tab[ENTRIES];
    /* verilator lint_on UNDRIVEN */
    logic [15:0] t;
    if (TAB_FILE != "") begin : g_init
      initial $readmemh(TAB_FILE, tab);
    end
    always_ff @(posedge clk) begin
      if (en) t <= tab[addr[i]];
    end
    assign t1[i] = t;
  end

  // stage 2: y = clamp(ZP_OUT + ((d*T + 2^(SHIFT-1)) >>> SHIFT), -128, 127)
  logic signed [47:0] v2[P];
  logic [7:0] y2[P];
  always_comb begin
    for (int i = 0; i < P; i++) begin
      v2[i] = 48'(d1[i]) * 48'(signed'({1'b0, t1[i]}));
      if (SHIFT > 0) v2[i] = v2[i] + (48'sd1 <<< (SHIFT > 0 ? SHIFT - 1 : 0));
      v2[i] = (v2[i] >>> SHIFT) + 48'(ZP_OUT);
      y2[i] = v2[i] > 127 ? 8'h7f : v2[i] < -128 ? 8'h80 : v2[i][7:0];
    end
  end

  always_ff @(posedge clk) begin
    if (wr) begin
      dv[wb][wc] <= dvrow;
      pre[wb][wc] <= prerow;
      base <= wc == LAST ? '0 : run[P];
    end
    if (rst) base <= '0;
    if (en) begin
      last1 <= plast[rb] && rc == LAST;
      for (int i = 0; i < P; i++) d1[i] <= dv[rb][rc][i];
      m_axis_tlast <= last1;
      for (int i = 0; i < P; i++) m_axis_tdata[8*i+:8] <= y2[i];
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
      v1 <= 1'b0;
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
      if (en) begin
        v1 <= ld;
        m_axis_tvalid <= v1;
      end
    end
  end
endmodule
`default_nettype wire
