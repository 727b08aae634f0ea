`default_nettype none
// The layer engine's element-wise unit (docs/engine.md, "Element-wise unit"): one layer per
// start pulse, its operands and result int8 feature maps in board memory in the engine's
// blocked layout (codegen/engine_image.py feature_bytes: G channels a block, block b of map
// X at X_BASE + b*X_STRIDE). The descriptor (codegen/engine_eltwise.py
// ELTWISE_FIELDS, field i at desc[32*i +: 32], stable from start to done) picks the mode:
//   ADD   y = clamp(ZY + ((MA*(a-ZA) + MB*(b-ZB) + 2^(S-1)) >>> S), LO, HI)
//   MUL   y = clamp(ZY + (((a-ZA)*(b-ZB)*M + 2^(S-1)) >>> S), LO, HI), b a map like a
//   MULV  the same, b a per-channel vector (a 1x1 map at B_BASE: B_STRIDE = G, the C bytes in
//         channel order; else block b's G bytes at B_BASE + b*B_STRIDE), broadcast
//   TABLE y = T[a + 128] (the 256-byte table at T_BASE on the weight port)
// LUT = 1 passes ADD/MUL/MULV's result through the table too (a fused activation); S = 0
// has no rounding term.
// Runs: with A_STRIDE = OUT_STRIDE (= B_STRIDE in ADD, MUL) = H*W*G (blocks contiguous) the
// map is one run of NB = ceil(H*W*C/DB) beats; else (strides multiples of the beat) a run
// of NB = ceil(H*W*G/DB) beats a block, run b from X_BASE + b*X_STRIDE, its last beat's
// bytes past the block those of the stride gap.
// Datapath: LANES byte lanes (default DATA_W/8: one beat a cycle; the unit is memory-bound).
// With fewer lanes a beat is computed
// over R = DATA_W/8/LANES cycles, slice s (bytes s*LANES ..) in its s-th cycle: slice 0 from the
// read data as it arrives, the others from a copy of the beat; rready is low for a beat that
// would start a computation (B in ADD, MUL; A in MULV, TABLE) while the lanes are still on the
// previous one, so such beats are taken at most one every R cycles. A byte's channel matters
// in MULV only: byte k of a beat is channel j = k mod G of a block: a run's block (a run a
// block), or, in one run, the block of the beat's first group or the next (H*W*G >= the beat:
// the descriptor checks it).
// Schedule (cycle 0: start; bbgrap_hls/model/engine_eltwise.py is its exact cycle count):
//   table  with a table, its 256/DB beats on w_axi from cycle 1 into a staging buffer; from
//          the cycle after a beat is in, TK = 4 bytes a cycle are written into each lane's
//          copy of the table (TK banks of 64 bytes, one write port: LUTRAM, 256/TK writes); the feature reads start at cycle 1 as without a table, but a
//          beat that starts a computation is not taken (rready low) before the cycle after
//          the last write;
//   reads  MULV's vector beats (a strided vector: a one-beat burst a block), then run by run
//          in chunks of len(p) = min(BURST, NB - p, beats to the next 4 KB of A, of B (ADD,
//          MUL), of OUT) beats, p the run's beats so far: an A burst on the feature port; a
//          chunk's A waits until fewer than CHUNKS chunks are in flight (read, not wholly
//          written), so the output buffer (CHUNKS*BURST beats) always has room. A chunk's
//          length, OUT and B addresses and whether it ends its run go into a queue of CHUNKS
//          entries at its A request; the B requests, read data, AW and W sides take them.
//   B      (ADD, MUL) per chunk a B burst on w_axi (w_axi_feat high: a feature address) after
//          the table's requests, from the cycle after its A request. A beat k is taken into
//          pbuf (BURST beats, index mod BURST) from the cycle after B beat k - BURST; B beat
//          k (the pair fires) from the cycle after A beat k, the lanes free and the table
//          written. No rready depends on a valid.
//   compute a result beat 3 cycles after its firing beat: products | rounding, zero point
//          and clamp (rq_round) | table or bypass, into the output buffer.
//   write  a chunk's AW once its last result is in the buffer (the cycle after), its W beats
//          from the cycle after the AW, one per wready, full strobes; done is high for the
//          one cycle after the last write response.
// The last beat of a run that is not a whole number of beats is written whole: its bytes
// past the run are the map region's padding or the block's stride gap (the layout keeps
// maps beat-aligned).
module engine_eltwise #(
    parameter int G      = 8,
    parameter int DATA_W = 128,
    parameter int ADDR_W = 32,
    parameter int BURST  = 64,   // beats a burst at most (<= 256)
    parameter int CHUNKS = 4,    // chunks in flight: the output buffer holds CHUNKS*BURST beats
    parameter int CMAX   = 512,  // MULV: the most channels a vector has (the vector buffer)
    parameter int LANES  = DATA_W / 8  // byte lanes computed a cycle (a power of two dividing the beat)
) (
    input  wire                  clk,
    input  wire                  rst,
    input  wire                  start,
    input  wire  [32*21-1:0]     desc,          // NF = 21 fields (ELTWISE_FIELDS)
    output logic                 done,
    // feature port: AXI4 read + write master
    output logic [ADDR_W-1:0]    m_axi_araddr,
    output logic [7:0]           m_axi_arlen,
    output logic [2:0]           m_axi_arsize,
    output logic [1:0]           m_axi_arburst,
    output logic                 m_axi_arvalid,
    input  wire                  m_axi_arready,
    input  wire  [DATA_W-1:0]    m_axi_rdata,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire  [1:0]           m_axi_rresp,   // errors are not handled
    input  wire                  m_axi_rlast,   // beats are counted
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                  m_axi_rvalid,
    output logic                 m_axi_rready,
    output logic [ADDR_W-1:0]    m_axi_awaddr,
    output logic [7:0]           m_axi_awlen,
    output logic [2:0]           m_axi_awsize,
    output logic [1:0]           m_axi_awburst,
    output logic                 m_axi_awvalid,
    input  wire                  m_axi_awready,
    output logic [DATA_W-1:0]    m_axi_wdata,
    output logic [DATA_W/8-1:0]  m_axi_wstrb,
    output logic                 m_axi_wlast,
    output logic                 m_axi_wvalid,
    input  wire                  m_axi_wready,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire  [1:0]           m_axi_bresp,   // errors are not handled
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                  m_axi_bvalid,
    output logic                 m_axi_bready,
    // weight port: AXI4 read master (the table)
    output logic [ADDR_W-1:0]    w_axi_araddr,
    output logic [7:0]           w_axi_arlen,
    output logic [2:0]           w_axi_arsize,
    output logic [1:0]           w_axi_arburst,
    output logic                 w_axi_arvalid,
    input  wire                  w_axi_arready,
    input  wire  [DATA_W-1:0]    w_axi_rdata,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire  [1:0]           w_axi_rresp,
    input  wire                  w_axi_rlast,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                  w_axi_rvalid,
    output logic                 w_axi_rready,
    output logic                 w_axi_feat     // the w_axi request reads the feature image (B)
);
  localparam int NF = 21;
  localparam int VW = G * 8;
  localparam int DB = DATA_W / 8;
  localparam int DBW = $clog2(DB);
  localparam int GW = $clog2(G);
  localparam int NCH = DB / G;                   // G-byte groups a beat
  localparam int NCW = NCH > 1 ? $clog2(NCH) : 1;
  localparam int TB = 256 / DB;                  // table beats
  localparam int OB = CHUNKS * BURST;            // output buffer beats
  localparam int OBW = $clog2(OB);
  localparam int ABW = $clog2(BURST);            // pair buffer index
  localparam int VB = (CMAX + DB - 1) / DB + 1;  // vector beats (+1: the block after the last)
  localparam int VBW = $clog2(VB);
  localparam int TBW = $clog2(TB + 1);
  localparam int TSB = $clog2(TB);               // staging buffer index (TB >= 2: DATA_W <= 1024)
  localparam int TK = 4;                         // table bytes written a cycle: banks of each copy
  localparam int TKW = $clog2(TK);
  localparam int TG = 256 / TK;                  // writes a table (a bank's depth)
  localparam int TGW = $clog2(TG);
  localparam int TS = DB / TK;                   // writes a table beat
  localparam int TSW = $clog2(TS);
  localparam int CW = $clog2(CHUNKS + 1);
  localparam int QW = CHUNKS > 1 ? $clog2(CHUNKS) : 1;  // chunk queue index
  localparam int R = DB / LANES;                 // cycles a beat in the lanes
  localparam int LW = 8 * LANES;
  localparam int SLW = R > 1 ? $clog2(R) : 1;    // slice index
  // descriptor fields (codegen/engine_eltwise.py ELTWISE_FIELDS)
  localparam int F_MODE = 0, F_H = 1, F_W = 2, F_C = 3, F_ZA = 4, F_ZB = 5, F_MA = 6, F_MB = 7, F_M = 8,
                 F_S = 9, F_ZY = 10, F_LO = 11, F_HI = 12, F_LUT = 13, F_A = 14, F_B = 15, F_OUT = 16, F_T = 17,
                 F_AS = 18, F_BS = 19, F_OS = 20;
  localparam logic [1:0] ADD = 2'd0, MULV = 2'd2, TABLE = 2'd3;

  initial begin
    if (DATA_W < 32 || (DATA_W & (DATA_W - 1)) != 0 || DATA_W > 1024)
      $error("engine_eltwise: DATA_W=%0d must be a power of two in 32..1024", DATA_W);
    if (G < 1 || (G & (G - 1)) != 0 || DB % G != 0)
      $error("engine_eltwise: G=%0d must be a power of two dividing DATA_W/8=%0d", G, DB);
    if (BURST < 2 || BURST > 256 || (BURST & (BURST - 1)) != 0)
      $error("engine_eltwise: BURST=%0d must be a power of two in 2..256", BURST);
    if (CHUNKS < 1 || (OB & (OB - 1)) != 0) $error("engine_eltwise: CHUNKS=%0d: CHUNKS*BURST a power of two", CHUNKS);
    if (CMAX < G || ADDR_W < 13 || ADDR_W > 32) $error("engine_eltwise: CMAX=%0d ADDR_W=%0d", CMAX, ADDR_W);
    if (LANES < 1 || (LANES & (LANES - 1)) != 0 || LANES > DB)
      $error("engine_eltwise: LANES=%0d must be a power of two dividing DATA_W/8=%0d", LANES, DB);
  end

  /* verilator lint_off UNUSEDSIGNAL */
  logic [31:0] fd[NF];  // the descriptor's fields (the int8 ones use their low byte)
  /* verilator lint_on UNUSEDSIGNAL */
  always_comb for (int i = 0; i < NF; i++) fd[i] = desc[32*i+:32];

  // beats from addr to the next 4 KB boundary
  function automatic logic [31:0] to4k(input logic [11:0] addr);
    to4k = (32'd4096 - {20'd0, addr}) >> DBW;
  endfunction

  // the chunk at map beat p: min(BURST, NB - p, beats to 4 KB of A, OUT and (ADD, MUL) B)
  function automatic logic [31:0] clen(input logic [31:0] p, input logic [31:0] nb, input logic [31:0] a,
                                       input logic [31:0] b, input logic [31:0] o, input logic two);
    logic [31:0] n, t;
    n = nb - p;
    if (n > 32'(BURST)) n = 32'(BURST);
    t = to4k(12'(a + (p << DBW)));
    if (t < n) n = t;
    t = to4k(12'(o + (p << DBW)));
    if (t < n) n = t;
    t = to4k(12'(b + (p << DBW)));
    if (two && t < n) n = t;
    clen = n;
  endfunction

  // ---- the layer: fields latched at start, the rest read from desc (stable until done) ----
  logic busy, bin, tab_on, runs, vstr;
  logic [1:0] mode;
  logic [31:0] nb, hw, vb, nrun, t_base, hwg;
  assign t_base = fd[F_T];

  always_ff @(posedge clk) begin
    if (rst) busy <= 1'b0;
    else if (start && !busy) busy <= 1'b1;
    else if (done) busy <= 1'b0;
  end
  always_ff @(posedge clk) begin
    if (start && !busy) begin
      mode <= fd[F_MODE][1:0];
      bin <= fd[F_MODE] < 32'd2;
      tab_on <= fd[F_MODE] == 32'd3 || fd[F_LUT] != 32'd0;
      hw <= fd[F_H] * fd[F_W];
      runs <= run_a;
      nrun <= run_a ? fd[F_C] >> GW : 32'd1;
      nb <= ((run_a ? hwg : hwg * (fd[F_C] >> GW)) + 32'(DB - 1)) >> DBW;
      vstr <= fd[F_BS] != 32'(G);
      // MULV: the vector's beats (a strided vector: one a block)
      vb <= fd[F_MODE] != 32'd2 ? 32'd0 : fd[F_BS] != 32'(G) ? fd[F_C] >> GW : (fd[F_C] + 32'(DB - 1)) >> DBW;
    end
  end
  // a run a block unless A, OUT (and B: ADD, MUL) have contiguous blocks
  logic run_a;
  assign hwg = (fd[F_H] * fd[F_W]) << GW;
  assign run_a = fd[F_AS] != hwg || fd[F_OS] != hwg || (fd[F_MODE] < 32'd2 && fd[F_BS] != hwg);
  wire begin_l = start && !busy;

  // the chunk queue: length, OUT and B address, last chunk of its run (pushed at the A request)
  logic [31:0] q_len[CHUNKS], q_addr[CHUNKS];
  logic q_last[CHUNKS];
  logic [31:0] a_cnt, d_cnt, aw_cnt, w_cnt;  // chunks requested, read, AW sent, W sent
  function automatic logic [QW-1:0] qi(input logic [31:0] n);  // chunk n's queue entry
    qi = QW'(n & 32'(CHUNKS - 1));
  endfunction

  // ---- table: 256 bytes on the weight port into a staging buffer, then TK bytes a cycle into
  // every lane's copy (TK banks of 256/TK bytes, one write port each: LUTRAM); a beat that
  // would start a computation waits for the last write (rready low, the memory holds it) ------
  logic [TBW-1:0] t_req, t_got;
  logic tab_ready, t_we;
  logic [DATA_W-1:0] tstage[TB];  // the table's beats as they arrive
  logic [TGW-1:0] wc;             // the next TK-byte group to write (table bytes TK*wc ..)
  logic [8*TK-1:0] t_wd;
  logic [31:0] t_addr, t_len;
  assign t_addr = t_base + (32'(t_req) << DBW);
  always_comb begin
    t_len = 32'(TB) - 32'(t_req);
    if (to4k(t_addr[11:0]) < t_len) t_len = to4k(t_addr[11:0]);
  end
  logic t_ar, t_beat, b_ar;  // a table request, a table beat on w_axi; a B request
  logic [31:0] bq, q_baddr[CHUNKS];  // chunks whose B was requested; B addresses (queue)
  assign t_ar = tab_on && t_req != TBW'(TB);
  assign t_beat = tab_on && t_got != TBW'(TB);
  assign b_ar = !t_ar && bin && bq != a_cnt;  // after the table's, B of each chunk whose A is out
  assign w_axi_arvalid = busy && (t_ar || b_ar);
  assign w_axi_feat = !t_ar;
  assign w_axi_araddr = ADDR_W'(t_ar ? t_addr : q_baddr[qi(bq)]);
  assign w_axi_arlen = 8'((t_ar ? t_len : q_len[qi(bq)]) - 1);
  assign w_axi_arsize = 3'(DBW);
  assign w_axi_arburst = 2'b01;  // INCR
  // group wc is byte slice wc mod TS of staged beat wc / TS: written once that beat is in
  assign t_we = busy && tab_on && !tab_ready && 32'(wc) < (32'(t_got) << TSW);
  assign t_wd = (8 * TK)'(tstage[TSB'(32'(wc) >> TSW)] >> (8 * TK * (32'(wc) & 32'(TS - 1))));
  always_ff @(posedge clk) begin
    if (busy && w_axi_rvalid && t_beat) tstage[TSB'(t_got)] <= w_axi_rdata;
  end
  always_ff @(posedge clk) begin
    if (begin_l) begin
      t_req <= '0;
      t_got <= '0;
      bq <= '0;
      wc <= '0;
      tab_ready <= 1'b0;
    end else begin
      if (w_axi_arvalid && w_axi_arready && t_ar) t_req <= t_req + TBW'(t_len);
      if (w_axi_arvalid && w_axi_arready && !t_ar) bq <= bq + 1;
      if (busy && w_axi_rvalid && t_beat) t_got <= t_got + 1'b1;
      if (t_we) begin
        wc <= wc + 1'b1;
        if (wc == TGW'(TG - 1)) tab_ready <= 1'b1;
      end
    end
  end

  // ---- feature reads: the vector, then per chunk A (B on w_axi, above) ---------------------
  logic go, vec_ar, ar_hs, a_req, r_end;
  logic [31:0] v_req, v_addr, rp, rr, ra, rb, ro, r_len, r_addr;  // rp: beats of run rr so far
  logic [CW-1:0] infl;  // chunks whose A was requested and whose last W beat has not gone
  logic w_hs, w_end;
  assign go = busy;
  assign vec_ar = v_req != vb;
  always_comb begin
    if (vec_ar) begin
      r_addr = v_addr;
      r_len = vstr ? 32'd1 : vb - v_req;
      if (r_len > 32'(BURST)) r_len = 32'(BURST);
      if (to4k(r_addr[11:0]) < r_len) r_len = to4k(r_addr[11:0]);
    end else begin
      r_addr = ra + (rp << DBW);
      r_len = clen(rp, nb, ra, rb, ro, bin);
    end
  end
  assign r_end = rp + r_len == nb;
  assign m_axi_arvalid = go && (vec_ar || (rr != nrun && infl != CW'(CHUNKS)));
  assign m_axi_araddr = ADDR_W'(r_addr);
  assign m_axi_arlen = 8'(r_len - 1);
  assign m_axi_arsize = 3'(DBW);
  assign m_axi_arburst = 2'b01;
  assign ar_hs = m_axi_arvalid && m_axi_arready;
  assign a_req = ar_hs && !vec_ar;
  always_ff @(posedge clk) begin
    if (begin_l) begin
      v_req <= '0;
      v_addr <= fd[F_B];
      rp <= '0;
      rr <= '0;
      ra <= fd[F_A];
      rb <= fd[F_B];
      ro <= fd[F_OUT];
      infl <= '0;
      a_cnt <= '0;
    end else begin
      if (a_req) begin
        q_len[qi(a_cnt)] <= r_len;
        q_addr[qi(a_cnt)] <= ro + (rp << DBW);
        q_baddr[qi(a_cnt)] <= rb + (rp << DBW);
        q_last[qi(a_cnt)] <= r_end;
        a_cnt <= a_cnt + 1;
      end
      if (ar_hs) begin
        if (vec_ar) begin
          v_req <= v_req + r_len;
          v_addr <= v_addr + (vstr ? fd[F_BS] : r_len << DBW);
        end else begin
          rp <= r_end ? 32'd0 : rp + r_len;
          if (r_end) begin  // the next run: each map's next block
            rr <= rr + 1;
            ra <= ra + fd[F_AS];
            rb <= rb + fd[F_BS];
            ro <= ro + fd[F_OS];
          end
        end
      end
      infl <= infl + CW'(a_req) - CW'(w_hs && w_end);
    end
  end

  // ---- read data: vector beats; A beats into pbuf, B beats (w_axi) fire with theirs -------
  logic [31:0] v_got, dk, d_len, vblk, vpix, ga, gb;  // ga, gb: A, B beats taken (ADD, MUL)
  logic vec_r, main_r, b_r, fire, blocked;
  logic [SLW-1:0] sl;  // the lanes' slice this cycle (0: free, or a beat's first)
  logic [DATA_W-1:0] pbuf[BURST];  // A beats waiting for their B (a slot reused BURST beats on)
  logic [DATA_W-1:0] op_a, op_b;
  // a firing beat (B in ADD, MUL; A in MULV, TABLE) waits for the lanes and the table
  assign blocked = sl != '0 || (tab_on && !tab_ready);
  assign m_axi_rready = bin ? ga - gb < 32'(BURST) : !(v_got == vb && blocked);
  assign w_axi_rready = t_beat || (ga > gb && !blocked);
  assign vec_r = busy && m_axi_rvalid && v_got != vb;
  assign main_r = busy && m_axi_rvalid && m_axi_rready && v_got == vb;
  assign b_r = busy && w_axi_rvalid && w_axi_rready && !t_beat;
  assign d_len = q_len[qi(d_cnt)];
  assign fire = bin ? b_r : main_r;
  always_ff @(posedge clk) begin
    if (main_r && bin) pbuf[ABW'(ga)] <= m_axi_rdata;
  end
  always_ff @(posedge clk) begin
    if (begin_l) begin
      v_got <= '0;
      d_cnt <= '0;
      dk <= '0;
      vblk <= '0;
      vpix <= '0;
      ga <= '0;
      gb <= '0;
    end else begin
      if (vec_r) begin
        v_got <= v_got + 1;
      end
      if (main_r) ga <= ga + 1;
      if (b_r) gb <= gb + 1;
      if (fire) begin
        if (dk == d_len - 1) begin
          dk <= '0;
          d_cnt <= d_cnt + 1;
          if (runs && q_last[qi(d_cnt)]) vblk <= vblk + 1;  // a run a block
        end else dk <= dk + 1;
      end
      if (fire && mode == MULV && !runs) begin  // the next beat's first group: NCH pixels on
        if (vpix + 32'(NCH) >= hw) begin
          vpix <= vpix + 32'(NCH) - hw;
          vblk <= vblk + 1;
        end else vpix <= vpix + 32'(NCH);
      end
    end
  end

  // MULV: the vector bytes of each lane (its group's block: vblk or the next)
  // the vector buffer: a memory per G-byte group of a beat (each written whole: a beat of a
  // vector in order writes them all, a strided vector's beat one, its first G bytes at
  // byte b*G); read at two blocks, vblk's and the next's
  logic [VW-1:0] vw0, vw1;
  logic [VW-1:0] vg0[NCH], vg1[NCH];
  logic [31:0] vsb, vb0, vb1;  // byte offsets of the strided write's block and of the two read blocks
  assign vsb = v_got << GW;
  assign vb0 = vblk << GW;
  assign vb1 = (vblk + 1) << GW;
  for (genvar q = 0; q < NCH; q++) begin : g_vgroup
    logic [VW-1:0] vm[VB];
    wire we = vec_r && (!vstr || (vsb & 32'(DB - 1)) >> GW == 32'(q));
    always_ff @(posedge clk) begin  // one write port
      if (we) vm[VBW'(vstr ? vsb >> DBW : v_got)] <= vstr ? m_axi_rdata[VW-1:0] : m_axi_rdata[q*VW+:VW];
    end
    assign vg0[q] = vm[VBW'(vb0 >> DBW)];
    assign vg1[q] = vm[VBW'(vb1 >> DBW)];
  end
  assign vw0 = vg0[NCW'((vb0 & 32'(DB - 1)) >> GW)];
  assign vw1 = vg1[NCW'((vb1 & 32'(DB - 1)) >> GW)];
  always_comb begin
    op_a = bin ? pbuf[ABW'(gb)] : m_axi_rdata;
    op_b = bin ? w_axi_rdata : m_axi_rdata;
    if (mode == MULV)
      for (int q = 0; q < NCH; q++) op_b[q*VW+:VW] = !runs && vpix + 32'(q) >= hw ? vw1 : vw0;
  end

  // ---- datapath: LANES lanes, one pair of products each for both ADD and MUL -------------
  logic f1, f2, f3, e1, e2, e3, mul_on, act, lst;
  logic signed [24:0] ma, mb, mm;
  logic signed [63:0] v1[LANES];
  logic [7:0] a1[LANES], a2[LANES], y2[LANES];
  logic [7:0] o3[LANES];
  logic [LW-1:0] la, lb, o3w;  // the lanes' operands this cycle, their results
  logic [31:0] cfg;
  assign mul_on = mode != ADD;
  assign ma = 25'(fd[F_MA]);
  assign mb = 25'(fd[F_MB]);
  assign mm = 25'(fd[F_M]);
  assign cfg = {fd[F_S][7:0], fd[F_ZY][7:0], fd[F_LO][7:0], fd[F_HI][7:0]};
  assign act = fire || sl != '0;
  assign lst = act && (R == 1 || sl == SLW'(R - 1));
  if (R == 1) begin : g_whole
    assign la = op_a;
    assign lb = op_b;
    assign sl = '0;
  end else begin : g_slices
    logic [DATA_W-1:0] ha, hb;  // the beat in the lanes (slices 1 .. R-1 read from here)
    always_ff @(posedge clk) begin
      if (fire) begin
        ha <= op_a;
        hb <= op_b;
      end
      if (rst || begin_l) sl <= '0;
      else if (act) sl <= sl == SLW'(R - 1) ? '0 : sl + 1'b1;
    end
    assign la = sl == '0 ? op_a[LW-1:0] : ha[LW*int'(sl)+:LW];
    assign lb = sl == '0 ? op_b[LW-1:0] : hb[LW*int'(sl)+:LW];
  end
  for (genvar k = 0; k < LANES; k++) begin : g_lane
    logic signed [8:0] da, db;
    logic signed [24:0] x1, y1;
    logic signed [17:0] x2;
    logic signed [33:0] p1;
    logic signed [42:0] p2;
    always_comb begin
      da = 9'(signed'(la[8*k+:8])) - 9'(signed'(fd[F_ZA][7:0]));
      db = 9'(signed'(lb[8*k+:8])) - 9'(signed'(fd[F_ZB][7:0]));
      // ADD: da*MA + db*MB; MUL: (da*db)*M (|da*db| < 2^17: 18 bits), the same two multipliers
      x1 = mul_on ? 25'(db) : ma;
      p1 = 34'(da) * 34'(x1);
      x2 = mul_on ? p1[17:0] : 18'(db);
      y1 = mul_on ? mm : mb;
      p2 = 43'(x2) * 43'(y1);
    end
    always_ff @(posedge clk) begin
      v1[k] <= mul_on ? 64'(p2) : 64'(p1) + 64'(p2);
      a1[k] <= la[8*k+:8];
      a2[k] <= a1[k];
    end
    rq_round round (.clk(clk), .en(1'b1), .v(v1[k]), .cfg(cfg), .y(y2[k]));
    wire [7:0] x3 = mode == TABLE ? a2[k] : y2[k];
    // the lane's copy of the table: entry i in bank i mod TK at i / TK; one address (single
    // port): the write group's while the table loads, the lane's entry after
    wire [7:0] ti = {~x3[7], x3[6:0]};
    wire [TGW-1:0] ta = tab_ready ? ti[7:TKW] : wc;
    logic [7:0] tv[TK];
    for (genvar j = 0; j < TK; j++) begin : g_bank
      logic [7:0] bank[TG];
      always_ff @(posedge clk) if (t_we) bank[ta] <= t_wd[8*j+:8];
      assign tv[j] = bank[ta];
    end
    always_ff @(posedge clk) o3[k] <= tab_on ? tv[ti[TKW-1:0]] : x3;
  end
  always_comb for (int k = 0; k < LANES; k++) o3w[8*k+:8] = o3[k];
  always_ff @(posedge clk) begin
    if (rst || begin_l) begin
      f1 <= 1'b0;
      f2 <= 1'b0;
      f3 <= 1'b0;
    end else begin
      f1 <= act;
      f2 <= f1;
      f3 <= f2;
    end
    e1 <= lst;
    e2 <= e1;
    e3 <= e2;
  end
  // a result beat: its slices in order, written to the output buffer with the last
  logic [DATA_W-1:0] obeat;
  if (R == 1) begin : g_out_whole
    assign obeat = o3w;
  end else begin : g_out_slices
    logic [DATA_W-LW-1:0] acc;  // slices 0 .. R-2, the first at the bottom
    always_ff @(posedge clk) begin
      if (f3) acc <= (DATA_W - LW)'({o3w, acc} >> LW);
    end
    assign obeat = {o3w, acc};
  end

  // ---- output buffer and writes ------------------------------------------------------------
  logic [DATA_W-1:0] obuf[OB];
  logic [OBW-1:0] owr, ord;
  logic [31:0] produced, ap, a_len, wleft, w_len, wcom, b_cnt;
  logic aw_hs;
  assign a_len = q_len[qi(aw_cnt)];
  assign m_axi_awvalid = busy && aw_cnt != a_cnt && produced >= ap + a_len;
  assign m_axi_awaddr = ADDR_W'(q_addr[qi(aw_cnt)]);
  assign m_axi_awlen = 8'(a_len - 1);
  assign m_axi_awsize = 3'(DBW);
  assign m_axi_awburst = 2'b01;
  assign aw_hs = m_axi_awvalid && m_axi_awready;
  assign w_len = wleft != 0 ? wleft : q_len[qi(w_cnt)];
  assign m_axi_wvalid = busy && wcom != 0;
  assign m_axi_wdata = obuf[ord];
  assign m_axi_wstrb = '1;
  assign m_axi_wlast = w_len == 1;
  assign w_hs = m_axi_wvalid && m_axi_wready;
  assign w_end = m_axi_wlast;
  assign m_axi_bready = 1'b1;
  assign done = busy && rr == nrun && aw_cnt == a_cnt && b_cnt == aw_cnt;
  always_ff @(posedge clk) begin
    if (f3 && e3) obuf[owr] <= obeat;
  end
  always_ff @(posedge clk) begin
    if (begin_l) begin
      owr <= '0;
      ord <= '0;
      produced <= '0;
      ap <= '0;
      w_cnt <= '0;
      wleft <= '0;
      wcom <= '0;
      aw_cnt <= '0;
      b_cnt <= '0;
    end else begin
      if (f3 && e3) begin
        owr <= owr + 1'b1;
        produced <= produced + 1;
      end
      if (aw_hs) begin
        ap <= ap + a_len;
        aw_cnt <= aw_cnt + 1;
      end
      wcom <= wcom + (aw_hs ? a_len : 32'd0) - 32'(w_hs);
      if (w_hs) begin
        ord <= ord + 1'b1;
        wleft <= w_len - 1;
        if (w_end) w_cnt <= w_cnt + 1;
      end
      if (busy && m_axi_bvalid) b_cnt <= b_cnt + 1;
    end
  end
endmodule
`default_nettype wire
