`default_nettype none
// The layer engine's window unit (docs/engine.md, "Window unit"): max pool, average pool
// (a global one is a window of the whole map) and depthwise conv on a feature map in the
// engine's blocked layout (codegen/engine_image.py `feature_bytes`: G channels a block, each
// block pixel-major), one layer per start pulse, the layer's fields in `desc`
// (codegen/engine_window.py WINDOW_FIELDS, field i at desc[32*i +: 32]).
//
// Output rows are taken in order, block by block (row n: block n / HO, row n mod HO). Four
// engines run side by side (bbgrap_hls/model/engine_window.py follows them row by row):
//   loader   (feature AR/R) for row n, the input rows its windows need that are not loaded
//            yet, as one run of bursts over the beats covering them (a block's rows are
//            contiguous, block b at IN_BASE + b*IN_STRIDE); one cycle a row no window reads,
//            one cycle to decide; it starts
//            row n's rows while row n-1 computes if they do not overwrite row n-1's (slot =
//            global row mod KB), else once row n-1 has issued its last tap;
//   fetcher  (weight AR/R, depthwise) block k's W_BEATS beats into half k mod 2 of the
//            weight memory and records, once block k-2 is no longer read (block k-1 started);
//   compute  row n once its rows, its block's weights and room in the output buffer (row
//            n-2 written) are there: one idle cycle, then WO·KH·ceil(KW/TAPS) cycles, one
//            tap group a cycle for all G lanes: up to TAPS taps of one window row (kx .. kx +
//            TAPS - 1, the row's last group partial), each from the row buffer or the pad
//            value, reduced (a TAPS-input max, or an adder tree of TAPS values or products)
//            into the accumulator; pixels come out requantised 4 cycles after their last
//            group and are packed into beats;
//   writer   (feature AW/W/B) once row n is packed: the beats of its run completed by it (the
//            run's last row: all, the last beat zero-filled) as INCR bursts of at most 256
//            beats inside a 4 KB page, one cycle to decide; it does not wait for write
//            responses. A run is the whole map from OUT_BASE (OUT_STRIDE = HO*WO*G: blocks
//            contiguous), else one block, block b's from OUT_BASE + b*OUT_STRIDE (a multiple
//            of the beat), the packer starting a new beat at each block.
// `done` pulses the cycle after the last write response. The row buffer holds KB input rows
// in NB = max(PPB, TAPS rounded up to a power of two) banks, PPB = DATA_W/(8G) pixels a
// beat: pixel q of a load (counted from its first beat's lane 0) sits in bank q mod NB, at
// word x >> log2(NB) of its row's slot (x: its column), so a read beat writes PPB distinct
// banks at once and a tap group (TAPS consecutive pixels of one row; a row is never split
// between loads) reads TAPS distinct banks, each at its own address. The weight memory is
// banked the same way by G-byte word, so a group's TAPS tap words come out in one cycle.
// Average and depthwise requantise with rq_lane (per layer: MULT/SHIFT; per channel: the
// block's records); max pool passes the byte through the same pipeline depth.
module engine_window #(
    parameter int G      = 8,
    parameter int DATA_W = 128,
    parameter int ADDR_W = 32,
    parameter int WMAX   = 64,  // widest input row (pixels)
    parameter int WOMAX  = 64,  // widest output row (pixels)
    parameter int KB     = 4,   // row buffer slots: a power of two, at least the tallest window
    parameter int KMAX   = 9,   // most depthwise taps KH·KW
    parameter int TAPS   = 1,   // window taps a cycle (of one window row)
    parameter int NF     = 27   // descriptor fields (WINDOW_FIELDS)
) (
    input  wire                clk,
    input  wire                rst,
    input  wire                start,
    input  wire  [32*NF-1:0]   desc,
    output logic               done,
    // feature port: read the input map, write the output map
    output logic [ADDR_W-1:0]  m_axi_araddr,
    output logic [7:0]         m_axi_arlen,
    output logic [2:0]         m_axi_arsize,
    output logic [1:0]         m_axi_arburst,
    output logic               m_axi_arvalid,
    input  wire                m_axi_arready,
    input  wire  [DATA_W-1:0]  m_axi_rdata,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire  [1:0]         m_axi_rresp,   // errors are not handled
    input  wire                m_axi_rlast,   // beats are counted
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                m_axi_rvalid,
    output logic               m_axi_rready,
    output logic [ADDR_W-1:0]  m_axi_awaddr,
    output logic [7:0]         m_axi_awlen,
    output logic [2:0]         m_axi_awsize,
    output logic [1:0]         m_axi_awburst,
    output logic               m_axi_awvalid,
    input  wire                m_axi_awready,
    output logic [DATA_W-1:0]  m_axi_wdata,
    output logic [DATA_W/8-1:0] m_axi_wstrb,
    output logic               m_axi_wlast,
    output logic               m_axi_wvalid,
    input  wire                m_axi_wready,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire  [1:0]         m_axi_bresp,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                m_axi_bvalid,
    output logic               m_axi_bready,
    // weight port: depthwise records and weights
    output logic [ADDR_W-1:0]  w_axi_araddr,
    output logic [7:0]         w_axi_arlen,
    output logic [2:0]         w_axi_arsize,
    output logic [1:0]         w_axi_arburst,
    output logic               w_axi_arvalid,
    input  wire                w_axi_arready,
    input  wire  [DATA_W-1:0]  w_axi_rdata,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire  [1:0]         w_axi_rresp,
    input  wire                w_axi_rlast,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                w_axi_rvalid,
    output logic               w_axi_rready
);
  localparam int B = DATA_W / 8;             // bytes a beat
  localparam int LGB = $clog2(B);
  localparam int PPB = DATA_W / (8 * G);     // pixels a beat
  localparam int LGG = $clog2(G);
  localparam int LGKB = $clog2(KB);
  localparam int TP2 = 1 << $clog2(TAPS);     // TAPS rounded up to a power of two
  localparam int NB = PPB > TP2 ? PPB : TP2;  // row buffer and weight memory banks
  localparam int LGNB = $clog2(NB);
  localparam int NBW = LGNB > 0 ? LGNB : 1;
  localparam int RW = (WMAX + NB - 1) / NB;   // bank words a row slot
  localparam int RD = KB * RW;                 // bank depth
  localparam int OFD = 2 * ((WOMAX + PPB - 1) / PPB) + 2;  // output beats held: two rows' and a carry
  localparam int WBMAX = ((8 + KMAX) * G + B - 1) / B;  // a block's weight beats (two blocks held)
  // a block's weight words (G bytes): its beats', and a group's reads past the last tap
  localparam int WWORDS = WBMAX * PPB > 8 + KMAX + TAPS - 1 ? WBMAX * PPB : 8 + KMAX + TAPS - 1;
  localparam int WD = (WWORDS + NB - 1) / NB;  // weight bank words a block
  localparam int PW = 8 * G;                 // bits a pixel

  initial begin
    if (G < 1 || (G & (G - 1)) != 0) $error("engine_window: G=%0d must be a power of two", G);
    if (DATA_W < 64 || (DATA_W & (DATA_W - 1)) != 0 || DATA_W > 1024 || DATA_W < 8 * G)
      $error("engine_window: DATA_W=%0d must be a power of two in 64..1024, at least 8*G", DATA_W);
    if (KB < 2 || (KB & (KB - 1)) != 0) $error("engine_window: KB=%0d must be a power of two >= 2", KB);
    if (WMAX < PPB) $error("engine_window: WMAX=%0d below the pixels a beat (%0d)", WMAX, PPB);
    if (ADDR_W < 13 || ADDR_W > 32) $error("engine_window: ADDR_W=%0d outside 13..32", ADDR_W);
    if (NF != 27) $error("engine_window: NF=%0d, WINDOW_FIELDS has 27", NF);
    if (TAPS < 1) $error("engine_window: TAPS=%0d below 1", TAPS);
  end

  // ---- descriptor ------------------------------------------------------------------------
  function automatic int fld(input int i);
    return int'(desc[32*i +: 32]);
  endfunction
  int d_mode, d_h, d_w, d_c, d_ho, d_wo, d_kh, d_kw, d_sh, d_sw, d_pt, d_pl, d_bias, d_wbeats;
  logic [7:0] d_pad, d_shift, d_zp, d_lo, d_hi;
  logic [31:0] d_mult;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [31:0] d_in, d_out, d_wb, d_istr, d_ostr;  // bases, strides: the bits above ADDR_W are not used
  /* verilator lint_on UNUSEDSIGNAL */
  always_comb begin
    d_mode = fld(0);
    d_h = fld(1);
    d_w = fld(2);
    d_c = fld(3);
    d_ho = fld(4);
    d_wo = fld(5);
    d_kh = fld(6);
    d_kw = fld(7);
    d_sh = fld(8);
    d_sw = fld(9);
    d_pt = fld(10);
    d_pl = fld(11);
    d_pad = desc[32*14 +: 8];
    d_bias = fld(15);
    d_mult = desc[32*16 +: 32];
    d_shift = desc[32*17 +: 8];
    d_zp = desc[32*18 +: 8];
    d_lo = desc[32*19 +: 8];
    d_hi = desc[32*20 +: 8];
    d_in = desc[32*21 +: 32];
    d_out = desc[32*22 +: 32];
    d_wb = desc[32*23 +: 32];
    d_wbeats = fld(24);
    d_istr = desc[32*25 +: 32];
    d_ostr = desc[32*26 +: 32];
  end
  /* verilator lint_off UNUSEDSIGNAL */
  logic [63:0] d_pb_pr;  // PB, PR: the output size is given (HO, WO)
  /* verilator lint_on UNUSEDSIGNAL */
  assign d_pb_pr = desc[32*12 +: 64];

  // burst length from `a` for `left` beats: at most 256, not past the 4 KB page
  function automatic int burst(input logic [11:0] a, input int left);
    int n;
    n = (4096 - int'({20'd0, a})) >>> LGB;
    if (left < n) n = left;
    if (n > 256) n = 256;
    return n;
  endfunction

  int nblk, nrows;
  assign nblk = d_c >>> LGG;
  logic mode_max, mode_dw;
  assign mode_max = d_mode == 0;
  assign mode_dw = d_mode == 2;
  logic run;
  logic [ADDR_W-1:0] hwg, wg;  // IN_STRIDE, a row's bytes

  // ---- loader state ----------------------------------------------------------------------
  typedef enum logic [1:0] {L_IDLE, L_ROW, L_REQ} lstate_t;
  lstate_t lst;
  int ln, lblk, loy, llo, lhave, lgrow, l_rend, l_beats;
  logic [ADDR_W-1:0] lblk_addr, lhave_addr, l_end, l_endb, l_firstb;
  logic l_safe, l_perm;
  logic [ADDR_W-1:0] ar_addr;
  int ar_left, ld_beats, ld_rcv, rx_pix, rx_x, ld_npix;
  logic [LGKB-1:0] rx_slot;
  logic [NBW-1:0] rx_ph;  // bank of the beat's lane 0 (the load's first: bank 0)

  // ---- fetcher state ---------------------------------------------------------------------
  typedef enum logic [1:0] {F_IDLE, F_REQ} fstate_t;
  fstate_t fst;
  int fk, wf_rcv, war_left;
  logic [ADDR_W-1:0] war_addr, wblk_addr;
  logic [63:0] rec [2][G];  // {(m << 8) | s, bias'} per half and lane

  // ---- compute state ---------------------------------------------------------------------
  typedef enum logic [1:0] {C_IDLE, C_WAIT, C_ISSUE} cstate_t;
  cstate_t cst;
  int cn, cblk, coy, clo, cgrow, cstart_blk, ox, ky, kx, trow, ixb;
  logic c_ready, c_lastrow;

  // ---- writer state ----------------------------------------------------------------------
  typedef enum logic [1:0] {W_IDLE, W_BURST} wstate_t;
  wstate_t wst;
  int wn, wbeats, w_target, rows_packed, outstanding, w_oy;
  logic [ADDR_W-1:0] wbytes, wbytes_next, wbeats_up, wbeats_dn, w_run, ostr;
  logic w_all, o_runs, w_runend;
  logic [DATA_W-1:0] ofifo [OFD];
  int wp, rp, pk_lane;
  logic [DATA_W-1:0] pk_beat;
  logic [ADDR_W-1:0] aw_addr, w_addr;
  int aw_left, w_left, w_blen, w_cur;

  // ---- row buffer and weight memory: NB banks each ---------------------------------------
  localparam int RDW = $clog2(RD);
  localparam int WDW = $clog2(2 * WD);
  logic [NBW-1:0] rowph [KB];  // bank of a slot's row's first pixel
  logic [PW-1:0] rd [NB], wrd [NB];
  logic [RDW-1:0] raddr [NB];
  logic [WDW-1:0] waddr [NB];
  logic issue;

  // feature beat lanes: position of lane j in the load
  int lx [PPB];
  logic [LGKB-1:0] lslot [PPB];
  logic lval [PPB];
  always_comb begin
    for (int j = 0; j < PPB; j++) begin
      lx[j] = rx_x + j;
      lslot[j] = rx_slot;
      if (lx[j] >= d_w) begin
        lx[j] = lx[j] - d_w;
        lslot[j] = rx_slot + 1'b1;
      end
      lval[j] = lst == L_REQ && m_axi_rvalid && rx_pix + j >= 0 && rx_pix + j < ld_npix;
    end
  end

  // weight beat wf_rcv holds words wf_rcv·PPB .. + PPB - 1 of the block (word t: bank t mod NB)
  int wfw;
  logic wf_v;
  assign wfw = wf_rcv * PPB;
  assign wf_v = fst == F_REQ && w_axi_rvalid;

  for (genvar k = 0; k < NB; k++) begin : g_bank
    logic [PW-1:0] mem [RD];
    logic [PW-1:0] wmem [2*WD];
    int j, jw;  // the feature / weight beat lane bank k takes (none: PPB or more)
    assign j = (k - int'(rx_ph)) & (NB - 1);
    assign jw = (k - wfw) & (NB - 1);
    always_ff @(posedge clk) begin
      if (j < PPB && lval[j & (PPB - 1)])
        mem[int'(lslot[j & (PPB - 1)]) * RW + (lx[j & (PPB - 1)] >>> LGNB)] <= m_axi_rdata[(j & (PPB - 1))*PW +: PW];
      if (wf_v && jw < PPB)
        wmem[int'(fk[0]) * WD + ((wfw + jw) >>> LGNB)] <= w_axi_rdata[(jw & (PPB - 1))*PW +: PW];
      if (issue) begin
        rd[k] <= mem[raddr[k]];
        wrd[k] <= wmem[waddr[k]];
      end
    end
  end

  // ---- tap issue: the group of taps kx .. kx + TAPS - 1 of window row ky ------------------
  int iy, ix, tap, wword;
  int ti [NB], wi [NB];  // the tap of the group bank k serves (feature, weight)
  logic rowin, last_tap, first_tap, last_px;
  logic tin [TAPS], tval [TAPS];  // tap i inside the map, inside the window row
  logic [LGKB-1:0] tslot;
  logic [NBW-1:0] bank0, wbank0;
  always_comb begin
    iy = clo + ky;
    ix = ixb + kx;
    tap = trow + kx;
    wword = 8 + tap;
    rowin = iy >= 0 && iy < d_h;
    for (int i = 0; i < TAPS; i++) begin
      tval[i] = kx + i < d_kw;
      tin[i] = rowin && ix + i >= 0 && ix + i < d_w;
    end
    tslot = LGKB'(cgrow + iy);
    bank0 = NBW'((int'(rowph[tslot]) + ix) & (NB - 1));
    wbank0 = NBW'(wword & (NB - 1));
    for (int k = 0; k < NB; k++) begin
      ti[k] = (k - int'(bank0)) & (NB - 1);
      wi[k] = (k - int'(wbank0)) & (NB - 1);
      raddr[k] = ti[k] < TAPS && tin[ti[k] < TAPS ? ti[k] : 0] ? RDW'(int'(tslot) * RW + ((ix + ti[k]) >>> LGNB)) : '0;
      // depthwise only: other modes' tap counts may pass the weight memory
      waddr[k] = mode_dw && wi[k] < TAPS ? WDW'(int'(cblk[0]) * WD + ((wword + wi[k]) >>> LGNB)) : '0;
    end
    first_tap = ky == 0 && kx == 0;
    last_tap = ky == d_kh - 1 && kx + TAPS >= d_kw;
    last_px = last_tap && ox == d_wo - 1;
    issue = cst == C_ISSUE;
  end

  // pipeline: c1 (row buffer / weight words out), c2 (accumulator), c3, c4 (packed)
  logic p1_v, p1_first, p1_last, p1_rowend, p1_final, p1_half, p1_bend, p2_bend, p3_bend, p4_bend;
  logic p1_pad [TAPS], p1_val [TAPS];
  logic p2_v, p2_rowend, p2_final, p2_half, p3_v, p3_rowend, p3_final, p4_v, p4_rowend, p4_final;
  logic [NBW-1:0] p1_bank, p1_wbank;
  logic signed [31:0] acc [G];
  logic [7:0] ym1 [G], ym2 [G], yq [G];
  logic [PW-1:0] pix [TAPS], wpx [TAPS];
  logic [PW-1:0] ypix;
  always_comb begin
    for (int i = 0; i < TAPS; i++) begin
      pix[i] = p1_pad[i] ? {G{d_pad}} : rd[(int'(p1_bank) + i) & (NB - 1)];
      wpx[i] = wrd[(int'(p1_wbank) + i) & (NB - 1)];
    end
  end

  always_ff @(posedge clk) begin
    p1_v <= issue;
    for (int i = 0; i < TAPS; i++) begin
      p1_pad[i] <= !tin[i];
      p1_val[i] <= tval[i];
    end
    p1_bank <= bank0;
    p1_wbank <= wbank0;
    p1_first <= first_tap;
    p1_last <= last_tap;
    p1_rowend <= last_px;
    p1_final <= last_px && c_lastrow;
    p1_bend <= last_px && o_runs && coy == d_ho - 1;  // a block's last pixel: its run ends
    p1_half <= cblk[0];
    p2_v <= p1_v && p1_last;
    p2_rowend <= p1_v && p1_rowend;
    p2_final <= p1_v && p1_final;
    p2_bend <= p1_v && p1_bend;
    p3_bend <= p2_bend;
    p4_bend <= p3_bend;
    p2_half <= p1_half;
    p3_v <= p2_v;
    p3_rowend <= p2_rowend;
    p3_final <= p2_final;
    p4_v <= p3_v;
    p4_rowend <= p3_rowend;
    p4_final <= p3_final;
    if (rst) begin
      p1_v <= 1'b0;
      p2_v <= 1'b0;
      p3_v <= 1'b0;
      p4_v <= 1'b0;
      p2_rowend <= 1'b0;
      p3_rowend <= 1'b0;
      p4_rowend <= 1'b0;
      p2_bend <= 1'b0;
      p3_bend <= 1'b0;
      p4_bend <= 1'b0;
    end
  end

  for (genvar j = 0; j < G; j++) begin : g_lane
    logic signed [7:0] v [TAPS], w [TAPS];
    logic signed [31:0] start_acc, gsum, gmax;
    logic [63:0] cfg;
    logic [31:0] r1;  // c1: the record's bias'
    logic [31:0] r2;  // c2: the record's (m << 8) | s
    // the group's reduction: the largest byte (taps past the window row read as -128, below
    // or equal to every byte) and the sum of its bytes or products (an adder tree)
    always_comb begin
      gsum = '0;
      gmax = -32'sd128;
      for (int i = 0; i < TAPS; i++) begin
        v[i] = signed'(pix[i][8*j +: 8]);
        w[i] = signed'(wpx[i][8*j +: 8]);
        if (p1_val[i]) begin
          gsum = gsum + (mode_dw ? 32'(v[i] * w[i]) : 32'(v[i]));
          if (32'(v[i]) > gmax) gmax = 32'(v[i]);
        end
      end
    end
    assign r1 = rec[p1_half][j][31:0];
    assign r2 = rec[p2_half][j][63:32];
    assign start_acc = mode_dw ? signed'(r1) : d_bias;
    always_ff @(posedge clk) begin
      if (p1_v) begin
        if (mode_max) acc[j] <= p1_first || gmax > acc[j] ? gmax : acc[j];
        else acc[j] <= (p1_first ? start_acc : acc[j]) + gsum;
      end
      ym1[j] <= acc[j][7:0];
      ym2[j] <= ym1[j];
    end
    // {m, s, zp, lo, hi}: depthwise from the block's record, average from the descriptor
    assign cfg = mode_dw ? {8'd0, r2[31:8], r2[7:0], d_zp, d_lo, d_hi}
                         : {d_mult, d_shift, d_zp, d_lo, d_hi};
    rq_lane u_rq (
        .clk(clk),
        .en (1'b1),
        .acc(acc[j]),
        .rq (cfg),
        .y  (yq[j])
    );
    assign ypix[8*j +: 8] = mode_max ? ym2[j] : yq[j];
  end

  // ---- AXI channels ----------------------------------------------------------------------
  int ar_len, war_len, aw_len;
  logic [DATA_W-1:0] pk_next;
  logic push, pop;
  always_comb begin
    ar_len = burst(ar_addr[11:0], ar_left);
    war_len = burst(war_addr[11:0], war_left);
    aw_len = burst(aw_addr[11:0], aw_left);
    w_cur = w_blen == 0 ? burst(w_addr[11:0], w_left) : w_blen;
    pk_next = pk_beat;
    pk_next[pk_lane*PW +: PW] = ypix;
    push = p4_v && (pk_lane == PPB - 1 || p4_final || p4_bend);
    pop = m_axi_wvalid && m_axi_wready;
  end
  assign m_axi_arvalid = lst == L_REQ && ar_left > 0;
  assign m_axi_araddr = ar_addr;
  assign m_axi_arlen = 8'(ar_len - 1);
  assign m_axi_arsize = 3'(LGB);
  assign m_axi_arburst = 2'b01;
  assign m_axi_rready = 1'b1;
  assign w_axi_arvalid = fst == F_REQ && war_left > 0;
  assign w_axi_araddr = war_addr;
  assign w_axi_arlen = 8'(war_len - 1);
  assign w_axi_arsize = 3'(LGB);
  assign w_axi_arburst = 2'b01;
  assign w_axi_rready = 1'b1;
  assign m_axi_awvalid = wst == W_BURST && aw_left > 0;
  assign m_axi_awaddr = aw_addr;
  assign m_axi_awlen = 8'(aw_len - 1);
  assign m_axi_awsize = 3'(LGB);
  assign m_axi_awburst = 2'b01;
  assign m_axi_wvalid = wst == W_BURST && w_left > 0;
  assign m_axi_wdata = ofifo[rp];
  assign m_axi_wstrb = '1;
  assign m_axi_wlast = w_cur == 1;
  assign m_axi_bready = 1'b1;

  // ---- loader ----------------------------------------------------------------------------
  always_comb begin
    l_rend = llo + d_kh - 1;
    if (l_rend > d_h - 1) l_rend = d_h - 1;
    l_end = lhave_addr + ADDR_W'((l_rend - lhave + 1) * d_w) * (ADDR_W'(1) << LGG);
    l_endb = (l_end + ADDR_W'(B - 1)) >> LGB;  // beat after the last one covering the rows
    l_firstb = lhave_addr >> LGB;
    l_beats = int'(32'(l_endb)) - int'(32'(l_firstb));
    // row n's new rows against row n-1's lowest (global rows, slot = row mod KB)
    l_safe = (lgrow + l_rend) - (cgrow + (clo > 0 ? clo : 0)) < KB;
    l_perm = ln == cn || (ln == cn + 1 && l_safe);
  end

  task automatic l_advance();
    ln <= ln + 1;
    if (loy == d_ho - 1) begin
      if (lblk == nblk - 1) begin
        lst <= L_IDLE;
      end else begin
        lst <= L_ROW;
        lblk <= lblk + 1;
        loy <= 0;
        llo <= -d_pt;
        lhave <= 0;
        lgrow <= lgrow + d_h;
        lblk_addr <= lblk_addr + hwg;
        lhave_addr <= lblk_addr + hwg;
      end
    end else begin
      lst <= L_ROW;
      loy <= loy + 1;
      llo <= llo + d_sh;
    end
  endtask

  always_ff @(posedge clk) begin
    if (m_axi_arvalid && m_axi_arready) begin
      ar_addr <= ar_addr + ADDR_W'(ar_len << LGB);
      ar_left <= ar_left - ar_len;
    end
    for (int j = 0; j < PPB; j++)
      if (lval[j] && lx[j] == 0) rowph[lslot[j]] <= NBW'((int'(rx_ph) + j) & (NB - 1));
    if (lst == L_REQ && m_axi_rvalid) begin
      rx_pix <= rx_pix + PPB;
      rx_ph <= NBW'((int'(rx_ph) + PPB) & (NB - 1));
      if (rx_x + PPB >= d_w) begin
        rx_x <= rx_x + PPB - d_w;
        rx_slot <= rx_slot + 1'b1;
      end else begin
        rx_x <= rx_x + PPB;
      end
      ld_rcv <= ld_rcv + 1;
    end
    case (lst)
      L_ROW: begin
        if (lhave < llo && lhave < d_h) begin  // a row no window reads
          lhave <= lhave + 1;
          lhave_addr <= lhave_addr + wg;
        end else if (lhave > l_rend) begin  // every row there already
          l_advance();
        end else if (l_perm) begin
          ar_addr <= lhave_addr & ~ADDR_W'(B - 1);
          ar_left <= l_beats;
          ld_beats <= l_beats;
          rx_pix <= -int'(32'(lhave_addr[LGB-1:0]) >> LGG);
          rx_x <= -int'(32'(lhave_addr[LGB-1:0]) >> LGG);
          rx_slot <= LGKB'(lgrow + lhave);
          rx_ph <= '0;
          ld_npix <= (l_rend - lhave + 1) * d_w;
          ld_rcv <= 0;
          lhave <= l_rend + 1;
          lhave_addr <= l_end;
          lst <= L_REQ;
        end
      end
      L_REQ: if (m_axi_rvalid && ld_rcv == ld_beats - 1) l_advance();
      default: ;
    endcase
    if (start && !run) begin
      lst <= L_ROW;
      ln <= 0;
      lblk <= 0;
      loy <= 0;
      llo <= -d_pt;
      lhave <= 0;
      lgrow <= 0;
      lblk_addr <= ADDR_W'(d_in);
      lhave_addr <= ADDR_W'(d_in);
    end
    if (rst) begin
      lst <= L_IDLE;
      ar_left <= 0;
    end
  end

  // ---- fetcher ---------------------------------------------------------------------------
  always_ff @(posedge clk) begin
    if (w_axi_arvalid && w_axi_arready) begin
      war_addr <= war_addr + ADDR_W'(war_len << LGB);
      war_left <= war_left - war_len;
    end
    case (fst)
      F_IDLE: if (run && mode_dw && fk < nblk && (fk < 2 || cstart_blk >= fk - 1)) begin
        war_addr <= wblk_addr;
        war_left <= d_wbeats;
        wf_rcv <= 0;
        fst <= F_REQ;
      end
      F_REQ: if (w_axi_rvalid) begin
        for (int j = 0; j < G; j++)
          if (wf_rcv == (8 * j) / B) rec[fk[0]][j] <= w_axi_rdata[((8 * j) % B) * 8 +: 64];
        wf_rcv <= wf_rcv + 1;
        if (wf_rcv == d_wbeats - 1) begin
          fk <= fk + 1;
          wblk_addr <= wblk_addr + ADDR_W'(d_wbeats << LGB);
          fst <= F_IDLE;
        end
      end
      default: ;
    endcase
    if (start && !run) begin
      fk <= 0;
      wblk_addr <= ADDR_W'(d_wb);
    end
    if (rst) begin
      fst <= F_IDLE;
      war_left <= 0;
    end
  end

  // ---- compute ---------------------------------------------------------------------------
  assign c_lastrow = cblk == nblk - 1 && coy == d_ho - 1;
  // row cn's input rows loaded, its block's weights in, row cn-2 written (room for row cn)
  assign c_ready = ln > cn && (!mode_dw || fk > cblk) && wn >= cn - 1;
  always_ff @(posedge clk) begin
    case (cst)
      C_WAIT: if (c_ready) begin
        ox <= 0;
        ky <= 0;
        kx <= 0;
        trow <= 0;
        ixb <= -d_pl;
        cstart_blk <= cblk;
        cst <= C_ISSUE;
      end
      C_ISSUE: begin
        if (kx + TAPS >= d_kw) begin  // the window row's last group
          kx <= 0;
          trow <= trow + d_kw;
          if (ky == d_kh - 1) begin
            ky <= 0;
            trow <= 0;
            ox <= ox + 1;
            ixb <= ixb + d_sw;
            if (ox == d_wo - 1) begin  // the row's last tap
              cn <= cn + 1;
              cst <= c_lastrow ? C_IDLE : C_WAIT;
              if (coy == d_ho - 1) begin
                coy <= 0;
                cblk <= cblk + 1;
                clo <= -d_pt;
                cgrow <= cgrow + d_h;
              end else begin
                coy <= coy + 1;
                clo <= clo + d_sh;
              end
            end
          end else begin
            ky <= ky + 1;
          end
        end else begin
          kx <= kx + TAPS;
        end
      end
      default: ;
    endcase
    if (start && !run) begin
      cst <= C_WAIT;
      cn <= 0;
      cblk <= 0;
      coy <= 0;
      clo <= -d_pt;
      cgrow <= 0;
      cstart_blk <= -1;
    end
    if (rst) cst <= C_IDLE;
  end

  // ---- packer and writer -----------------------------------------------------------------
  always_comb begin
    wbytes_next = wbytes + (ADDR_W'(d_wo) << LGG);
    // beats of the run complete once row wn is packed (the run's last row: every beat, the
    // last zero-filled)
    wbeats_up = (wbytes_next + ADDR_W'(B - 1)) >> LGB;
    wbeats_dn = wbytes_next >> LGB;
    w_runend = wn == nrows - 1 || (o_runs && w_oy == d_ho - 1);
    w_target = int'(32'(w_runend ? wbeats_up : wbeats_dn));
  end
  always_ff @(posedge clk) begin
    done <= 1'b0;
    if (p4_v) begin
      if (push) begin
        ofifo[wp] <= pk_next;
        wp <= wp == OFD - 1 ? 0 : wp + 1;
        pk_beat <= '0;
        pk_lane <= 0;
      end else begin
        pk_beat <= pk_next;
        pk_lane <= pk_lane + 1;
      end
    end
    if (p4_rowend) rows_packed <= rows_packed + 1;
    if (pop) begin
      rp <= rp == OFD - 1 ? 0 : rp + 1;
      w_left <= w_left - 1;
      w_addr <= w_addr + ADDR_W'(B);
      w_blen <= w_cur - 1;
    end
    if (m_axi_awvalid && m_axi_awready) begin
      aw_addr <= aw_addr + ADDR_W'(aw_len << LGB);
      aw_left <= aw_left - aw_len;
    end
    outstanding <= outstanding + (m_axi_awvalid && m_axi_awready ? 1 : 0) - (m_axi_bvalid ? 1 : 0);
    case (wst)
      W_IDLE: if (run && !w_all && rows_packed > wn) begin
        wbytes <= wbytes_next;
        w_oy <= w_oy == d_ho - 1 ? 0 : w_oy + 1;
        if (w_target > wbeats) begin
          aw_left <= w_target - wbeats;
          w_left <= w_target - wbeats;
          aw_addr <= w_run + (ADDR_W'(wbeats) << LGB);
          w_addr <= w_run + (ADDR_W'(wbeats) << LGB);
          w_blen <= 0;
          wbeats <= w_target;
          wst <= W_BURST;
        end else begin  // no beat completed by this row
          wn <= wn + 1;
        end
        if (o_runs && w_oy == d_ho - 1) begin  // the block's run ends: the next from its base
          wbytes <= '0;
          wbeats <= 0;
          w_run <= w_run + ostr;
        end
      end
      W_BURST: if (pop && w_left == 1) begin
        wn <= wn + 1;
        if (wn == nrows - 1) w_all <= 1'b1;
        wst <= W_IDLE;
      end
      default: ;
    endcase
    if (run && w_all && outstanding == (m_axi_bvalid ? 1 : 0)) begin
      done <= 1'b1;
      run <= 1'b0;
    end
    if (start && !run) begin
      run <= 1'b1;
      hwg <= ADDR_W'(d_istr);
      ostr <= ADDR_W'(d_ostr);
      o_runs <= d_ostr != 32'(d_ho * d_wo) << LGG;
      w_run <= ADDR_W'(d_out);
      w_oy <= 0;
      wg <= ADDR_W'(d_w) << LGG;
      nrows <= nblk * d_ho;
      wst <= W_IDLE;
      wn <= 0;
      wbeats <= 0;
      wbytes <= '0;
      w_all <= 1'b0;
      rows_packed <= 0;
      pk_lane <= 0;
      pk_beat <= '0;
    end
    if (rst) begin
      run <= 1'b0;
      wst <= W_IDLE;
      wp <= 0;
      rp <= 0;
      outstanding <= 0;
      aw_left <= 0;
      w_left <= 0;
      pk_lane <= 0;
      pk_beat <= '0;
      rows_packed <= 0;
      w_all <= 1'b0;
    end
  end
endmodule
`default_nettype wire
