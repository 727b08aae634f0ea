`default_nettype none
// Vector unit: per-channel reduction over K beats of each window (depthwise conv, max and
// average pooling, global average pooling). Input: windows in the order the swg emits
// (per output pixel: K taps, C/P beats of P lanes each, channels innermost). Per channel c:
//   MODE 0 (depthwise MAC): acc = bias'[c] + sum_k x[k,c] * w[k,c], then requantise
//   MODE 1 (max)          : y = max_k x[k,c] (no requantisation)
//   MODE 2 (sum)          : acc = bias'[c] + sum_k x[k,c], then requantise
// One beat per cycle; the output beat of channel group g leaves 4 cycles after the last
// tap of g arrives, so a frame of Ho*Wo*K*C/P input beats has that ii.
// Parallel window: J taps per beat (J*P lanes, tap block j in lanes [j*P, j*P+P)), K/J
// beats per window and channel group.
// Accumulators live in a memory of C/P words read one cycle ahead (forwarded when the
// previous beat wrote the same word).
// PACK (MODE 0): 1 computes each lane's product with a DSP48E2 multiply, 0 with lut_mul.sv
// (radix-4 Booth in LUTs, no DSP48E2: FINN's resType "lut"), combinational in the same
// stage-1 cycle, so cycles and latency are the same.
// Memories ($readmemh): W_FILE  K*C/P/J words of J*P*8 bits (address kb*C/P + g, lane
//                               j*P+i = w[kb*J+j][g*P+i]; MODE 0)
//                       B_FILE  C/P words of P*32 bits (MODE 0, 2)
//                       RQ_FILE C/P words of P*64 bits {m[23:0], s} (MODE 0, 2);
//                       RQ_ZP, RQ_LO, RQ_HI: their zero point and clamp, one for all channels
// UNIFORM = 1 (MODE 2): every channel's bias' is B_CONST and requantisation word RQ_CONST,
// module constants instead of B_FILE and RQ_FILE (an average pool of a per-tensor int8
// activation: bias' = -K*z_x, one multiplier and shift); the two memories are never read.
module vvu #(
    parameter int C       = 4,
    parameter int P       = 2,
    parameter int K       = 9,
    parameter int MODE    = 0,
    parameter int J       = 1,
    parameter int PACK    = 1,  // MODE 0: 1 products in DSP48E2s, 0 in LUTs (lut_mul.sv)
    parameter     W_FILE  = "",
    /* verilator lint_off UNUSEDPARAM */  // read by synthesis only (the rom_style attribute)
    parameter     W_STYLE = "block",  // weight ROM: "block" (BRAM/URAM) or "logic" (LUTs)
    /* verilator lint_on UNUSEDPARAM */
    parameter     B_FILE  = "",
    parameter     RQ_FILE = "",
    parameter int RQ_ZP   = 0,     // the requantisers' zero point and clamp, one for all channels
    parameter int RQ_LO   = -128,
    parameter int RQ_HI   = 127,
    parameter bit RQ_LUT  = 0,  // MODE 0, 2: 1 the requantisers' products in LUTs (rq_lane.sv)
    parameter bit UNIFORM = 0,  // MODE 2: 1 B_CONST and RQ_CONST for every channel
    parameter int B_CONST = 0,
    parameter logic [31:0] RQ_CONST = 32'd0  // {m[23:0], s}
) (
    input  wire                clk,
    input  wire                rst,
    input  wire                s_axis_tvalid,
    output logic               s_axis_tready,
    input  wire  [J*P*8-1:0]   s_axis_tdata,
    input  wire                s_axis_tlast,
    output logic               m_axis_tvalid,
    input  wire                m_axis_tready,
    output logic [P*8-1:0]     m_axis_tdata,
    output logic               m_axis_tlast
);
  localparam int CG = C / P;
  localparam int KB = K / J;  // beats per window and channel group
  localparam int GW = CG > 1 ? $clog2(CG) : 1;
  localparam int KW_ = KB > 1 ? $clog2(KB) : 1;
  localparam int AW = KB * CG > 1 ? $clog2(KB * CG) : 1;

  initial begin
    if (P < 1 || C % P != 0) $error("vvu: P=%0d must divide C=%0d", P, C);
    if (MODE < 0 || MODE > 2) $error("vvu: MODE=%0d must be 0 (mac), 1 (max) or 2 (sum)", MODE);
    if (J < 1 || K % J != 0) $error("vvu: J=%0d must divide K=%0d", J, K);
    if (PACK < 0 || PACK > 1) $error("vvu: PACK=%0d must be 0 (LUT) or 1 (DSP)", PACK);
    if (UNIFORM && MODE != 2) $error("vvu: UNIFORM needs MODE 2 (sum)");
  end

  /* verilator lint_off UNDRIVEN */  // ROMs: filled by $readmemh only
  // weights in block RAM (as the cost model counts them; Yosys would build shallow ROMs from LUTs)
  (* rom_style = W_STYLE *)
  logic [J*P*8-1:0] wmem[KB*CG];
  logic [P*32-1:0] bmem[CG];
  logic [P*32-1:0] rqmem[CG];
  /* verilator lint_on UNDRIVEN */
  // accumulators: block RAM above 64 words and from 1,024 bits, LUTRAM below, as the cost
  // model counts them (`memory`); left to itself Yosys takes LUTRAM for a few hundred words
  /* verilator lint_off UNUSEDPARAM */  // read by synthesis only (the ram_style attribute)
  localparam A_STYLE = CG > 64 && CG * P * 32 >= 1024 ? "block" : "distributed";
  /* verilator lint_on UNUSEDPARAM */
  (* ram_style = A_STYLE *)
  logic [P*32-1:0] amem[CG];
  generate
    if (W_FILE != "" && MODE == 0) begin : g_w
      initial $readmemh(W_FILE, wmem);
    end
    if (B_FILE != "" && MODE != 1) begin : g_b
      initial $readmemh(B_FILE, bmem);
    end
    if (RQ_FILE != "" && MODE != 1) begin : g_rq
      initial $readmemh(RQ_FILE, rqmem);
    end
  endgenerate

  logic en, fire;
  logic [GW-1:0] g;
  logic [KW_-1:0] k;
  logic [AW-1:0] wa;

  // ---- stage 0: counters and reads ------------------------------------------------------
  logic v1, first1, final1, last1, fwd1;
  logic [GW-1:0] g1;
  logic [J*P*8-1:0] x1, w1;
  logic [P*32-1:0] b1, a1, anew;

  assign s_axis_tready = en;
  assign fire = en && s_axis_tvalid;

  always_ff @(posedge clk) begin
    if (en) begin
      x1 <= s_axis_tdata;
      w1 <= wmem[wa];
      b1 <= UNIFORM ? {P{32'(B_CONST)}} : bmem[g];
      a1 <= amem[g];
      g1 <= g;
      first1 <= k == '0;
      final1 <= k == KW_'(KB - 1);
      last1 <= s_axis_tlast;
      fwd1 <= v1 && g1 == g;  // the beat now in stage 1 writes the word this beat reads
    end
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      g <= '0;
      k <= '0;
      wa <= '0;
      v1 <= 1'b0;
    end else begin
      if (en) v1 <= fire;
      if (fire) begin
        wa <= wa == AW'(KB * CG - 1) ? '0 : wa + 1'b1;
        if (g == GW'(CG - 1)) begin
          g <= '0;
          k <= k == KW_'(KB - 1) ? '0 : k + 1'b1;
        end else begin
          g <= g + 1'b1;
        end
      end
    end
  end

  // ---- stage 1: accumulate (read-modify-write of the accumulator memory) ------------------
  logic [P*32-1:0] aprev, anew_q;
  logic signed [31:0] xv[P], prev[P], term[P];
  assign aprev = fwd1 ? anew_q : a1;

  // MODE 0 with PACK = 0: the J*P products of the beat from LUTs (lut_mul.sv without its
  // register: read in this cycle, as the DSP multiply below is), lane l at lp[l]
  /* verilator lint_off UNUSEDSIGNAL */  // read only when MODE = 0 and PACK = 0
  logic signed [15:0] lp[J*P];
  /* verilator lint_on UNUSEDSIGNAL */
  generate
    if (MODE == 0 && PACK == 0) begin : g_lut
      for (genvar l = 0; l < J * P; l++) begin : g_l
        lut_mul #(.REG(0)) m (
            .clk(clk),
            .en (en),
            .x  (x1[8*l+:8]),
            .w  (w1[8*l+:8]),
            .p  (lp[l])
        );
      end
    end else begin : g_nolut
      always_comb for (int l = 0; l < J * P; l++) lp[l] = '0;
    end
  endgenerate

  // lane i of tap block j sits at bits [8*(j*P+i) +: 8]; xv: the max (MODE 1) or the sum
  // (MODE 2) of the J taps, term: what the beat adds (MODE 0: the J products)
  always_comb begin
    for (int i = 0; i < P; i++) begin
      xv[i] = 32'(signed'(x1[8*i+:8]));
      term[i] = MODE != 0 ? xv[i] : PACK == 0 ? 32'(lp[i]) : 32'(signed'(x1[8*i+:8]) * signed'(w1[8*i+:8]));
      for (int j = 1; j < J; j++) begin
        if (MODE == 1) begin
          if (32'(signed'(x1[8*(j*P+i)+:8])) > xv[i]) xv[i] = 32'(signed'(x1[8*(j*P+i)+:8]));
        end else if (MODE == 2) xv[i] = xv[i] + 32'(signed'(x1[8*(j*P+i)+:8]));
        else if (PACK == 0) term[i] = term[i] + 32'(lp[j*P+i]);
        else term[i] = term[i] + 32'(signed'(x1[8*(j*P+i)+:8]) * signed'(w1[8*(j*P+i)+:8]));
      end
      if (MODE != 0) term[i] = xv[i];
      prev[i] = signed'(aprev[32*i+:32]);
      if (MODE == 1) anew[32*i+:32] = first1 || xv[i] > prev[i] ? xv[i] : prev[i];
      else anew[32*i+:32] = (first1 ? signed'(b1[32*i+:32]) : prev[i]) + term[i];
    end
  end

  logic v2, last2;
  logic [P*32-1:0] acc2;
  logic [P*32-1:0] rq2;
  always_ff @(posedge clk) begin
    if (en) begin
      if (v1) amem[g1] <= anew;
      anew_q <= anew;
      acc2 <= anew;
      rq2 <= UNIFORM ? {P{RQ_CONST}} : rqmem[g1];
      last2 <= last1;
    end
  end

  // ---- stages 2-3: requantise (or pass the max through); output ---------------------------
  logic v3, v4, last3, last4;
  logic [P*8-1:0] y4, max3, max4;
  assign en = !v4 || m_axis_tready;

  always_ff @(posedge clk) begin
    if (rst) begin
      v2 <= 1'b0;
      v3 <= 1'b0;
      v4 <= 1'b0;
    end else if (en) begin
      v2 <= v1 && final1;
      v3 <= v2;
      v4 <= v3;
    end
  end

  always_ff @(posedge clk) begin
    if (en) begin
      last3 <= last2;
      last4 <= last3;
      for (int i = 0; i < P; i++) max3[8*i+:8] <= acc2[32*i+:8];
      max4 <= max3;
    end
  end

  for (genvar i = 0; i < P; i++) begin : g_lane
    rq_lane #(.RQ_LUT(RQ_LUT)) lane (
        .clk(clk),
        .en (en),
        .acc(acc2[32*i+:32]),
        .rq ({8'd0, rq2[32*i+:32], 8'(RQ_ZP), 8'(RQ_LO), 8'(RQ_HI)}),
        .y  (y4[8*i+:8])
    );
  end

  assign m_axis_tdata = MODE == 1 ? max4 : y4;
  assign m_axis_tvalid = v4;
  assign m_axis_tlast = last4 && v4;
endmodule
`default_nettype wire
