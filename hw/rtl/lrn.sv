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

  /* verilator lint_off UNDRIVEN */  // ROM: filled by $readmemh only
  logic [15:0] tab[ENTRIES];
  /* verilator lint_on UNDRIVEN */
  generate
    if (TAB_FILE != "") begin : g_init
      initial $readmemh(TAB_FILE, tab);
    end
  endgenerate

  function automatic logic [IW-1:0] code_of(input logic [SW-1:0] s);
    int bl, t;
    logic [SW-1:0] m;
    bl = 0;
    for (int b = 0; b < SW; b++) if (s[b]) bl = b + 1;
    t = bl - 1 - MBITS > 0 ? bl - 1 - MBITS : 0;
    m = s >> t;
    code_of = IW'((t << MBITS) + int'(m));
  endfunction

  logic signed [8:0] dv[2][C];      // d of every channel, per bank
  logic [SW-1:0] pre[2][C+1];       // prefix sums of d^2, pre[b][0] = 0
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
    end
  end

  always_ff @(posedge clk) begin
    if (wr) begin
      for (int i = 0; i < P; i++) begin
        dv[wb][int'(wc)*P+i] <= din[i];
        pre[wb][int'(wc)*P+i+1] <= run[i+1];
      end
      base <= wc == LAST ? '0 : run[P];
    end
    if (rst) base <= '0;
    pre[0][0] <= '0;
    pre[1][0] <= '0;
    if (en) begin
      last1 <= plast[rb] && rc == LAST;
      for (int i = 0; i < P; i++) begin
        /* verilator lint_off UNUSEDSIGNAL */  // channel indices: only their low bits address the banks
        int c, hi, lo;
        /* verilator lint_on UNUSEDSIGNAL */
        c = int'(rc) * P + i;
        hi = c + AFTER + 1 < C ? c + AFTER + 1 : C;
        lo = c - BEFORE > 0 ? c - BEFORE : 0;
        d1[i] <= dv[rb][c];
        t1[i] <= tab[code_of(pre[rb][hi] - pre[rb][lo])];
      end
      m_axis_tlast <= last1;
      for (int i = 0; i < P; i++) begin
        logic signed [47:0] v;
        v = 48'(d1[i]) * 48'(signed'({1'b0, t1[i]}));
        if (SHIFT > 0) v = v + (48'sd1 <<< (SHIFT > 0 ? SHIFT - 1 : 0));
        v = (v >>> SHIFT) + 48'(ZP_OUT);
        m_axis_tdata[8*i+:8] <= v > 127 ? 8'h7f : v < -128 ? 8'h80 : v[7:0];
      end
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
