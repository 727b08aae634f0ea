`default_nettype none
// Sliding window generator. Input: H x W x C frames in NHWC order, SIMD lanes per beat.
// Output: for each output pixel (oy, ox) in raster order, for each kernel tap (ky, kx),
// the C/SIMD beats of input pixel (oy*SH + ky*DH, ox*SW + kx*DW) of the padded image:
// the column order k*C + c that the mvu's weights use. Padding inserts PAD_VAL (the
// input zero point for conv, -128 for max pooling).
// A writer fills a circular buffer of ROWS padded rows, one beat per cycle, padded beats
// included (so it takes Hp*Wp*C/SIMD cycles per frame); a reader emits one beat per cycle
// once the rows of an output row are present. The default ROWS = max(TAIL + KHE, KHE + SH)
// (TAIL = Hp - (Ho-1)*SH, the rows released after a frame's last output row) lets the
// writer fill the next frame's first window while the last output row is read, so
// ii = max(Hp*Wp*C/SIMD, Ho*Wo*K*C/SIMD) exactly (docs/hardware.md), across frames too.
// RING > 0 (KHE < RING) sets the ring's rows instead: the short ring KHE + SH fills the next
// output row while this one is read, within a frame, and at a frame boundary the writer
// waits for the last output row (model/timing.py ring_frames gives the cycles).
// Parallel window: J taps per output beat (J | KH*KW), lane block i = tap tb + i, read
// through J read ports of the row memory; output SIMD*J lanes.
// Paired input (PX = 2, SIMD = C): a beat carries pixels (y, 2u) in lanes [0, C) and
// (y, 2u+1) in lanes [C, 2C) (W even). The writer stores one padded column pair (2q, 2q+1)
// per cycle into two banks (even and odd padded columns, WP2 = ceil(Wp/2) words a row), so it
// takes Hp*WP2 cycles a frame. With PL even a pair is one input beat or padding; with PL odd
// it straddles two beats: column 2q is the high pixel of the previous beat (held in a
// register), column 2q+1 the low pixel of the beat taken now. The reader reads both banks at
// the column's word and selects the column's parity after the read register.
// Reader phase and step (conv.sv with PO = 2): the reader emits only the windows of output
// columns ox = OX0, OX0 + OXS, ... (OX0 < OXS); the defaults read them all.
// Groups (GROUPS > 1, a grouped conv; PX = 1): a window is emitted group by group, each
// group's taps over its C/GROUPS channels only (beats (g, tap, block) for g < GROUPS), the
// order in which the mvu computes the groups in turn; SIMD | C/GROUPS. Or whole pixels in
// (OL = C/GROUPS < SIMD = C): a word holds every group, a tap's beat is group g's OL-lane
// slice of the word, selected after the read (the writer then takes a pixel a cycle).
// UltraRAM ring (RING_URAM = R > 0; PX = 1, R a power of two dividing C/SIMD): a memory word
// (ram_style "ultra") holds R ring words, ring word a at memory word a/R, bits (a%R)*SIMD*8.
// The writer gathers a group's first R-1 words in a register and writes the memory word whole,
// {beat, gathered}, with the group's last (no byte enables: one write and one read a cycle a
// copy); the reader reads word ra/R and selects ring word ra%R after the read register. With
// OL < SIMD (CG = 1, so R = 1) the OL slice is taken of that word. A row ends a group and the
// reader reads whole rows only, so cycles and data are those of RING_URAM = 0. A copy holds
// DEPTH/R words of R*SIMD*8 bits (the cost model's uram_memory).
module swg #(
    parameter int C       = 4,
    parameter int SIMD    = 2,
    parameter int H       = 4,
    parameter int W       = 4,
    parameter int KH      = 3,
    parameter int KW      = 3,
    parameter int SH      = 1,
    parameter int SW      = 1,
    parameter int DH      = 1,
    parameter int DW      = 1,
    parameter int PT      = 1,
    parameter int PL      = 1,
    parameter int PB      = 1,
    parameter int PR      = 1,
    parameter int PAD_VAL = 0,
    parameter int J       = 1,
    parameter int PX      = 1,  // input pixels per beat (2: SIMD = C, W even)
    parameter int OX0     = 0,  // first output column read
    parameter int OXS     = 1,  // output column step of the reader
    parameter int GROUPS  = 1,  // channel groups, emitted in turn (a grouped conv)
    parameter int OL      = SIMD,  // lanes of a tap's beat: SIMD, or a group's C/GROUPS of a wider word
    // the rows of the last output row, the unused bottom rows (TAIL - KHE) and the next
    // frame's first window: max(TAIL + KHE, KHE + SH)
    parameter int ROWS    = ((H + PT + PB - (KH - 1) * DH - 1) % SH + (KH - 1) * DH + 1 > SH
                             ? (H + PT + PB - (KH - 1) * DH - 1) % SH + 2 * ((KH - 1) * DH + 1)
                             : (KH - 1) * DH + 1 + SH),
    parameter int RING    = 0,  // the ring's rows, if > 0 (a short ring); else ROWS
    parameter int RING_URAM = 0  // ring words an UltraRAM word holds, if > 0 (PX = 1, R | C/SIMD)
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 s_axis_tvalid,
    output logic                s_axis_tready,
    input  wire  [PX*SIMD*8-1:0] s_axis_tdata,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire                 s_axis_tlast,  // frames are counted, not marked
    /* verilator lint_on UNUSEDSIGNAL */
    output logic                m_axis_tvalid,
    input  wire                 m_axis_tready,
    output logic [J*OL*8-1:0]   m_axis_tdata,
    output logic                m_axis_tlast
);
  localparam int CG = C / SIMD;
  localparam int HP = H + PT + PB;
  localparam int WP = W + PL + PR;
  localparam int KHE = (KH - 1) * DH + 1;
  localparam int KWE = (KW - 1) * DW + 1;
  localparam int HO = (HP - KHE) / SH + 1;
  localparam int WO = (WP - KWE) / SW + 1;
  localparam int TAIL = HP - (HO - 1) * SH;  // rows released after the last output row
  localparam int WP2 = (WP + 1) / 2;  // padded column pairs a row (PX = 2)
  localparam int WOR = (WO - OX0 + OXS - 1) / OXS;  // output columns read a row
  localparam int NR = RING > 0 ? RING : ROWS;  // rows of the ring
  localparam int DEPTH = PX == 2 ? NR * WP2 : NR * WP * CG;  // words (of a bank with PX = 2)
  localparam int AW = $clog2(DEPTH);
  localparam int RW = $clog2(NR + 1);
  localparam int XW = $clog2((HP > WP ? HP : WP) + 1);
  localparam int GW = CG > 1 ? $clog2(CG) : 1;
  localparam int SPW = SIMD / OL;  // group slices a word (OL < SIMD: whole pixels in, CG = 1)
  localparam int CGG = SPW > 1 ? 1 : CG / GROUPS;  // beats of a tap's group channels
  localparam int SW2 = SPW > 1 ? $clog2(SPW) : 1;
  localparam int QW = GROUPS > 1 ? $clog2(GROUPS) : 1;
  localparam int K = KH * KW;
  localparam int TW = $clog2(K + 1);
  localparam int RU = RING_URAM > 0 ? RING_URAM : 1;  // ring words a memory word
  localparam int LR = $clog2(RU);
  localparam int MAW = $clog2(DEPTH / RU);

  initial begin
    if (SIMD < 1 || C % SIMD != 0) $error("swg: SIMD=%0d must divide C=%0d", SIMD, C);
    if (HP < KHE || WP < KWE) $error("swg: kernel %0dx%0d larger than padded input %0dx%0d", KHE, KWE, HP, WP);
    if (NR < KHE + 1) $error("swg: a ring of %0d rows must exceed the window height %0d", NR, KHE);
    if (J < 1 || K % J != 0) $error("swg: J=%0d must divide the kernel size %0d", J, K);
    if (PX != 1 && (PX != 2 || SIMD != C || W % 2 != 0))
      $error("swg: PX=%0d must be 1, or 2 with SIMD=C (%0d, %0d) and W even (%0d)", PX, SIMD, C, W);
    if (OX0 < 0 || OXS < 1 || OX0 >= OXS || OX0 >= WO)
      $error("swg: reader phase OX0=%0d and step OXS=%0d (OX0 < OXS, OX0 < Wo=%0d)", OX0, OXS, WO);
    if (GROUPS < 1 || (GROUPS > 1 && PX != 1) || (OL == SIMD ? CG % GROUPS != 0
        : (GROUPS == 1 || OL * GROUPS != C || SIMD != C || J < 1)))
      $error("swg: GROUPS=%0d must divide C/SIMD=%0d, or OL=%0d be C/GROUPS of whole pixels (SIMD = C) (and PX = 1)",
             GROUPS, CG, OL);
    if (RING_URAM < 0 || (RING_URAM > 0 && (PX != 1 || CG % RING_URAM != 0 || (1 << LR) != RING_URAM)))
      $error("swg: RING_URAM=%0d must be a power of two dividing C/SIMD=%0d (and PX = 1)", RING_URAM, CG);
  end

  // block RAM from 1,024 bits and 65 words on, LUTRAM below, as the cost model counts a
  // line buffer (`memory`); left to itself Yosys takes LUTRAM for a few hundred words;
  // UltraRAM with RING_URAM (`uram_memory`)
  /* verilator lint_off UNUSEDPARAM */  // read by synthesis only (the ram_style attribute)
  localparam MEM_STYLE = RING_URAM > 0 ? "ultra"
                       : DEPTH > 64 && DEPTH * SIMD * 8 >= 1024 ? "block" : "distributed";
  /* verilator lint_on UNUSEDPARAM */
  logic signed [15:0] wabs, rbase;  // absolute row counters (wrap harmlessly)
  logic signed [15:0] ahead;

  // ---- writer ----------------------------------------------------------------------------
  logic [XW-1:0] wr_r, wr_c;  // padded row; padded column (PX = 1) or column pair (PX = 2)
  logic [GW-1:0] wr_g;
  logic [AW-1:0] wa;
  logic pad, wr_ok, wr_fire, row_end;
  logic [PX*SIMD*8-1:0] wdata;  // PX = 2: the pair's words {odd, even}
  assign ahead = wabs - rbase;
  assign wr_ok = ahead < 16'(NR);
  assign s_axis_tready = wr_ok && !pad;
  assign wr_fire = wr_ok && (pad || s_axis_tvalid);
  generate
    if (PX == 2) begin : g_wpair
      // input columns of the pair: x0 = 2q - PL, x1 = x0 + 1; the pair takes an input beat
      // when x0 (PL even) or x1 (PL odd: x1 is even, x0 comes from the held pixel) is in it
      logic rowin;
      logic [1:0] cpad;  // padded columns 2q, 2q+1 are padding
      logic signed [XW+1:0] x0, x1;
      assign rowin = int'(wr_r) >= PT && int'(wr_r) < PT + H;
      assign x0 = (XW + 2)'(2 * int'(wr_c) - PL);
      assign x1 = x0 + 1'b1;
      assign cpad[0] = !rowin || x0 < 0 || x0 >= (XW + 2)'(W);
      assign cpad[1] = !rowin || x1 < 0 || x1 >= (XW + 2)'(W);
      if (PL % 2 == 0) begin : g_even
        assign pad = cpad[0];
        assign wdata = {cpad[1] ? {SIMD{8'(PAD_VAL)}} : s_axis_tdata[SIMD*8+:SIMD*8],
                        cpad[0] ? {SIMD{8'(PAD_VAL)}} : s_axis_tdata[0+:SIMD*8]};
      end else begin : g_odd
        logic [SIMD*8-1:0] held;  // the high pixel of the beat taken at the previous pair
        always_ff @(posedge clk) begin
          if (wr_fire && !pad) held <= s_axis_tdata[SIMD*8+:SIMD*8];
        end
        assign pad = cpad[1];
        assign wdata = {cpad[1] ? {SIMD{8'(PAD_VAL)}} : s_axis_tdata[0+:SIMD*8],
                        cpad[0] ? {SIMD{8'(PAD_VAL)}} : held};
      end
      assign row_end = wr_c == XW'(WP2 - 1);
    end else begin : g_wone
      assign pad = int'(wr_r) < PT || int'(wr_r) >= PT + H || int'(wr_c) < PL || int'(wr_c) >= PL + W;
      assign wdata = pad ? {SIMD{8'(PAD_VAL)}} : s_axis_tdata;
      assign row_end = wr_g == GW'(CG - 1) && wr_c == XW'(WP - 1);
    end
  endgenerate

  always_ff @(posedge clk) begin
    if (rst) begin
      wr_r <= '0;
      wr_c <= '0;
      wr_g <= '0;
      wa <= '0;
      wabs <= '0;
    end else if (wr_fire) begin
      wa <= wa == AW'(DEPTH - 1) ? '0 : wa + 1'b1;
      if (PX == 1 && wr_g != GW'(CG - 1)) wr_g <= wr_g + 1'b1;
      else begin
        wr_g <= '0;
        if (!row_end) wr_c <= wr_c + 1'b1;
        else begin
          wr_c <= '0;
          wabs <= wabs + 1'b1;
          wr_r <= wr_r == XW'(HP - 1) ? '0 : wr_r + 1'b1;
        end
      end
    end
  end

  // ---- reader ----------------------------------------------------------------------------
  // Tap t = ky*KW + kx of the window sits ROFF[t] rows below and COFF[t] columns right of
  // the window's corner; a beat holds taps tb .. tb+J-1 (lane block i = tap tb+i).
  function automatic logic [K*XW-1:0] offsets(input logic rows);
    offsets = '0;
    for (int t = 0; t < K; t++) offsets[t*XW+:XW] = XW'(rows ? (t / KW) * DH : (t % KW) * DW);
  endfunction
  localparam logic [K*XW-1:0] ROFF = offsets(1'b1);
  localparam logic [K*XW-1:0] COFF = offsets(1'b0);

  logic [XW-1:0] oy, ox;
  logic [TW-1:0] tb;     // first tap of the beat
  logic [GW-1:0] rg;     // beat of the tap's channels: group rq's block rg - rq*CGG
  logic [QW-1:0] rq;     // group (GROUPS > 1)
  logic [GW-1:0] rg0;    // the group's first block, rq*CGG (its word with whole pixels in)
  logic [GW-1:0] nxt0;   // the next group's first block
  /* verilator lint_off UNUSEDSIGNAL */  // read with OL < SIMD only
  logic [SW2-1:0] rs, rsel;  // the group's slice of the word (OL < SIMD); the one read
  /* verilator lint_on UNUSEDSIGNAL */
  logic [RW-1:0] bslot;  // slot of row oy*SH
  logic [XW-1:0] col0;   // ox*SW
  logic rd_ok, rd_fire, end_g, end_k, end_q, end_ox, end_oy;
  logic [AW-1:0] ra[J];

  assign rd_ok = wabs - rbase >= 16'(KHE);
  assign rd_fire = rd_ok && (!m_axis_tvalid || m_axis_tready);
  assign end_g = rg == rg0 + GW'(CGG - 1);
  assign end_k = end_g && tb == TW'(K - J);
  assign end_q = end_k && rq == QW'(GROUPS - 1);
  assign end_ox = end_q && ox == XW'(WOR - 1);
  assign end_oy = end_ox && oy == XW'(HO - 1);

  function automatic logic [RW-1:0] slot_add(input logic [RW-1:0] s, input int n);
    int t;
    t = 32'(s) + n;
    slot_add = RW'(t >= NR ? t - NR : t);
  endfunction

  // x*c (mod 2^32) for a constant c by shifts and adds: Yosys maps a product by a constant
  // to a DSP48E2 once it is wide enough (LeNet's 2x2 pool, CG = 6: one DSP), and the cost
  // model budgets none for a window generator
  function automatic logic [31:0] times(input logic [31:0] x, input logic [31:0] c);
    times = '0;
    for (int b = 0; b < 32; b++) if (c[b]) times = times + (x << b);
  endfunction

  /* verilator lint_off UNUSEDSIGNAL */  // read with PX = 2 only
  logic [J-1:0] par;  // PX = 2: the tap's padded column is odd
  /* verilator lint_on UNUSEDSIGNAL */
  always_comb begin
    for (int i = 0; i < J; i++) begin
      logic [31:0] col;
      col = 32'(col0) + 32'(COFF[(32'(tb) + i)*XW+:XW]);
      par[i] = col[0];
      if (PX == 2)
        ra[i] = AW'(times(32'(slot_add(bslot, 32'(ROFF[(32'(tb) + i)*XW+:XW]))), 32'(WP2)) + (col >> 1));
      else
        ra[i] = AW'(times(times(32'(slot_add(bslot, 32'(ROFF[(32'(tb) + i)*XW+:XW]))), 32'(WP)) + col,
                          32'(CG)) + 32'(rg));
    end
  end

  // RING_URAM = R > 1 (PX = 1): a group's first R-1 ring words wait in gath; the memory word
  // {beat, gath} is written with the group's last (wlast)
  if (RU > 1) begin : g_gather
    logic [(RU-1)*SIMD*8-1:0] gath;
    logic [RU*SIMD*8-1:0] wword;
    logic wlast;
    always_ff @(posedge clk) begin
      for (int k = 0; k < RU - 1; k++)
        if (wr_fire && wa[LR-1:0] == LR'(k)) gath[k*SIMD*8+:SIMD*8] <= wdata[0+:SIMD*8];
    end
    assign wlast = &wa[LR-1:0];
    assign wword = (RU*SIMD*8)'({wdata[0+:SIMD*8], gath});
  end

  // One copy of the row memory per read port, each written alike (the model's `j` copies):
  // one memory with J read ports made Yosys 0.70 abort in memory_libmap (DS-CNN's stem conv,
  // J = 40), and a block RAM has two ports anyway.
  for (genvar i = 0; i < J; i++) begin : g_port
    for (genvar b = 0; b < PX; b++) begin : g_bank  // PX = 2: even, odd padded columns
      logic [SIMD*8-1:0] q;  // the ring word read (OL < SIMD: the slice rsel goes out)
      if (RU > 1) begin : g_words  // R ring words a memory word: word ra%R of word ra/R
        (* ram_style = MEM_STYLE *)
        logic [RU*SIMD*8-1:0] mem[DEPTH/RU];
        logic [RU*SIMD*8-1:0] qw;
        logic [LR-1:0] rlo;
        always_ff @(posedge clk) begin
          if (wr_fire && g_gather.wlast) mem[MAW'(wa >> LR)] <= g_gather.wword;
          if (rd_fire) begin
            qw <= mem[MAW'(ra[i] >> LR)];
            rlo <= ra[i][LR-1:0];
          end
        end
        assign q = qw[32'(rlo)*SIMD*8+:SIMD*8];
      end else begin : g_word
        (* ram_style = MEM_STYLE *)
        logic [SIMD*8-1:0] mem[DEPTH];
        always_ff @(posedge clk) begin
          if (wr_fire) mem[wa] <= wdata[b*SIMD*8+:SIMD*8];
          if (rd_fire) q <= mem[ra[i]];
        end
      end
    end
    if (PX == 2) begin : g_sel
      logic odd;
      always_ff @(posedge clk) begin
        if (rd_fire) odd <= par[i];
      end
      assign m_axis_tdata[i*SIMD*8+:SIMD*8] = odd ? g_bank[1].q : g_bank[0].q;
    end else if (SPW > 1) begin : g_slice
      assign m_axis_tdata[i*OL*8+:OL*8] = g_bank[0].q[32'(rsel)*OL*8+:OL*8];
    end else begin : g_one
      assign m_axis_tdata[i*SIMD*8+:SIMD*8] = g_bank[0].q;
    end
  end

  always_ff @(posedge clk) begin
    if (rd_fire) m_axis_tlast <= end_oy;
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      oy <= '0;
      ox <= '0;
      tb <= '0;
      rg <= '0;
      bslot <= '0;
      col0 <= XW'(OX0 * SW);
      rbase <= '0;
      m_axis_tvalid <= 1'b0;
    end else begin
      if (rd_fire) m_axis_tvalid <= 1'b1;
      else if (m_axis_tready) m_axis_tvalid <= 1'b0;
      if (rd_fire) begin
        if (!end_g) rg <= rg + 1'b1;
        else begin
          rg <= !end_k ? rg0 : !end_q ? nxt0 : '0;  // the group's first block again, or the next group's
          if (!end_k) tb <= tb + TW'(J);
          else begin
            tb <= '0;
            if (end_q) begin  // (else the next group's taps: g_groups)
              if (!end_ox) begin
                ox <= ox + 1'b1;
                col0 <= col0 + XW'(OXS * SW);
              end else begin
                ox <= '0;
                col0 <= XW'(OX0 * SW);
                if (!end_oy) begin
                  oy <= oy + 1'b1;
                  bslot <= slot_add(bslot, SH);
                  rbase <= rbase + 16'(SH);
                end else begin
                  oy <= '0;
                  bslot <= slot_add(bslot, TAIL);
                  rbase <= rbase + 16'(TAIL);
                end
              end
            end
          end
        end
      end
    end
  end

  // the window's group and its first channel block (constants without groups)
  if (GROUPS > 1) begin : g_groups
    always_ff @(posedge clk) begin
      if (rst) begin
        rq <= '0;
        rg0 <= '0;
      end else if (rd_fire && end_k) begin
        rq <= end_q ? '0 : rq + 1'b1;
        rg0 <= end_q ? '0 : nxt0;
      end
    end
  end else begin : g_one_group
    assign rq = '0;
    assign rg0 = '0;
  end
  if (SPW > 1) begin : g_slices  // whole pixels in: the groups are slices of one word
    assign nxt0 = rg0;  // (CG = 1: one word a pixel)
    always_ff @(posedge clk) begin
      if (rst) rs <= '0;
      else if (rd_fire && end_k) rs <= end_q || rs == SW2'(SPW - 1) ? '0 : rs + 1'b1;
      if (rd_fire) rsel <= rs;
    end
  end else begin : g_blocks
    assign nxt0 = rg0 + GW'(CGG);
    assign rs = '0;
    assign rsel = '0;
  end
endmodule
`default_nettype wire
