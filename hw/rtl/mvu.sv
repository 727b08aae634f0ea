`default_nettype none
// Matrix-vector unit: y = requant(bias + W x) for a stream of vectors of MW int8 values.
// Folding: SIMD input lanes, PE output lanes; SF = MW/SIMD input beats per vector, NF = MH/PE
// neuron folds. Fold 0 consumes the input beats as they arrive and stores them; folds
// 1..NF-1 reuse the stored vector, so a vector takes SF*NF cycles (ii per vector) and the
// input is stalled during folds 1..NF-1. Output: NF beats of PE int8 lanes per vector,
// 5 cycles after the fold's last compute cycle.
// NG (a grouped conv's folds per group, NG | NF; 0: NF): the vector is the group's window, a
// new one at each group's first fold (nf mod NG = 0), which consumes the input beats as they
// arrive; the group's other folds reuse it. The input then brings NF/NG vectors of MW values
// per output pixel, one per group; a vector still takes SF*NF cycles per pixel.
// PACK = 2: output lanes 2i and 2i+1 share one DSP48E2 per input lane (mac2.sv: two int8
// products of the same x in one 27 x 18 multiply, separated and corrected every cycle);
// an odd PE's last lane stays alone. Same cycles, same memories; PACK = 1: one multiplier
// per product; PACK = 0: every product in LUTs (lut_mul.sv, no DSP48E2: FINN's resType
// "lut"), same cycles.
// Memories ($readmemh; words in fold order, lane/bank i at bits [i*width +: width]):
//   W_FILE : NF*SF words of PE*SIMD*8 bits, address nf*SF+sf, bank pe, lane s holds
//            W[nf*PE+pe][sf*SIMD+s]
//   B_FILE : NF words of PE*32 bits (int32 bias', lane pe = row nf*PE+pe)
//   RQ_FILE: NF words of PE*32 bits ({m[23:0], s} per row); RQ_ZP, RQ_LO, RQ_HI: the rows' zero point
//            and clamp, one for all (rq_lane.sv takes {m, s, RQ_ZP, RQ_LO, RQ_HI})
module mvu #(
    parameter int MW      = 8,
    parameter int MH      = 4,
    parameter int SIMD    = 2,
    parameter int PE      = 2,
    parameter int NG      = 0,  // folds per group (a grouped conv); 0: NF, one vector
    parameter int PACK    = 1,
    parameter     W_FILE  = "",
    /* verilator lint_off UNUSEDPARAM */  // read by synthesis only (the rom_style attribute)
    parameter     W_STYLE = "block",  // weight ROM: "block" (BRAM/URAM) or "logic" (LUTs)
    /* verilator lint_on UNUSEDPARAM */
    parameter     B_FILE  = "",
    parameter     RQ_FILE = "",
    parameter int RQ_ZP   = 0,     // the requantisers' zero point and clamp, one for all rows
    parameter int RQ_LO   = -128,
    parameter int RQ_HI   = 127,
    parameter bit RQ_LUT  = 0  // 1: the requantisers' products in LUTs (rq_lane.sv), no DSP48E2
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 s_axis_tvalid,
    output logic                s_axis_tready,
    input  wire  [SIMD*8-1:0]   s_axis_tdata,
    input  wire                 s_axis_tlast,
    output logic                m_axis_tvalid,
    input  wire                 m_axis_tready,
    output logic [PE*8-1:0]     m_axis_tdata,
    output logic                m_axis_tlast
);
  localparam int SF = MW / SIMD;
  localparam int NF = MH / PE;
  localparam int SW_ = SF > 1 ? $clog2(SF) : 1;
  localparam int NW = NF > 1 ? $clog2(NF) : 1;
  localparam int AW = SF * NF > 1 ? $clog2(SF * NF) : 1;
  localparam int NGF = NG > 0 ? NG : NF;  // folds per vector

  initial begin
    if (SIMD < 1 || MW % SIMD != 0) $error("mvu: SIMD=%0d must divide MW=%0d", SIMD, MW);
    if (PE < 1 || MH % PE != 0) $error("mvu: PE=%0d must divide MH=%0d", PE, MH);
    if (PACK < 0 || PACK > 2) $error("mvu: PACK=%0d must be 0 (LUT), 1 or 2", PACK);
    if (NGF < 1 || NF % NGF != 0) $error("mvu: NG=%0d must divide NF=%0d", NG, NF);
  end

  /* verilator lint_off UNDRIVEN */  // ROMs: filled by $readmemh only
  // weights in block RAM, or in LUTs where the plan says so (W_STYLE = "logic"), as the cost
  // model counts them (left to itself, Yosys would build shallow ROMs from LUTs)
  (* rom_style = W_STYLE *)
  logic [PE*SIMD*8-1:0] wmem[SF*NF];
  logic [PE*32-1:0] bmem[NF];
  logic [PE*32-1:0] rqmem[NF];
  /* verilator lint_on UNDRIVEN */
  // the input vector: block RAM from 1,024 bits and 65 words on, as the cost model counts it
  // (`memory`); left to itself Yosys 0.70 picks a LUTRAM shape for a single-port RAM of
  // 257+ words that its own UltraScale map cannot build ("invalid OPTION_ABITS/WIDTH")
  /* verilator lint_off UNUSEDPARAM */  // read by synthesis only (the ram_style attribute)
  localparam IBUF_STYLE = SF > 64 && SF * SIMD * 8 >= 1024 ? "block" : "distributed";
  /* verilator lint_on UNUSEDPARAM */
  (* ram_style = IBUF_STYLE *)
  logic [SIMD*8-1:0] ibuf[SF];
  generate
    if (W_FILE != "") begin : g_w
      initial $readmemh(W_FILE, wmem);
    end
    if (B_FILE != "") begin : g_b
      initial $readmemh(B_FILE, bmem);
    end
    if (RQ_FILE != "") begin : g_rq
      initial $readmemh(RQ_FILE, rqmem);
    end
  endgenerate

  // ---- stage 0: fold counters, memory reads -------------------------------------------
  logic en, fire;
  logic [SW_-1:0] sf;
  logic [NW-1:0] nf;
  logic [AW-1:0] wa;
  logic vlast;  // tlast of the vector held in ibuf
  logic olast;

  logic v1, sel1, first1, last1, olast1;
  logic [NW-1:0] nf1;
  logic [SIMD*8-1:0] sdat1, ibuf1;
  logic [PE*SIMD*8-1:0] w1;

  logic [NW-1:0] ng;  // fold within the vector's group (nf when NG = NF)
  logic fresh;        // the vector's first fold: its beats come from the input
  assign fresh = ng == '0;
  if (NGF < NF) begin : g_groups
    always_ff @(posedge clk) begin
      if (rst) ng <= '0;
      else if (fire && sf == SW_'(SF - 1)) ng <= ng == NW'(NGF - 1) ? '0 : ng + 1'b1;
    end
  end else begin : g_one_group
    assign ng = nf;
  end
  assign s_axis_tready = en && fresh;
  assign fire = en && (!fresh || s_axis_tvalid);
  assign olast = nf == NW'(NF - 1) && sf == SW_'(SF - 1) && (fresh ? s_axis_tlast : vlast);

  always_ff @(posedge clk) begin
    if (fire && fresh) ibuf[sf] <= s_axis_tdata;
    if (en) begin
      sdat1 <= s_axis_tdata;
      ibuf1 <= ibuf[sf];
      w1 <= wmem[wa];
      sel1 <= fresh;
      first1 <= sf == '0;
      last1 <= sf == SW_'(SF - 1);
      olast1 <= olast;
      nf1 <= nf;
    end
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      sf <= '0;
      nf <= '0;
      wa <= '0;
      vlast <= 1'b0;
      v1 <= 1'b0;
    end else begin
      if (en) v1 <= fire;
      if (fire) begin
        if (fresh && sf == SW_'(SF - 1)) vlast <= s_axis_tlast;
        wa <= wa == AW'(SF * NF - 1) ? '0 : wa + 1'b1;
        if (sf == SW_'(SF - 1)) begin
          sf <= '0;
          nf <= nf == NW'(NF - 1) ? '0 : nf + 1'b1;
        end else begin
          sf <= sf + 1'b1;
        end
      end
    end
  end

  // ---- stage 1: products ---------------------------------------------------------------
  logic [SIMD*8-1:0] x1;
  logic [PE*SIMD*16-1:0] prod2;  // product (p, s) at bits [16*(p*SIMD+s) +: 16]
  logic [PE*32-1:0] bias2;
  logic v2, first2, last2, olast2;
  logic [NW-1:0] nf2;
  assign x1 = sel1 ? sdat1 : ibuf1;

  generate
    if (PACK == 2) begin : g_pack
      // lanes 2i (w_lo) and 2i+1 (w_hi): one mac2 (one DSP48E2) per pair and input lane
      for (genvar i = 0; i < PE / 2; i++) begin : g_pair
        for (genvar s = 0; s < SIMD; s++) begin : g_s
          mac2 m (
              .clk (clk),
              .en  (en),
              .x   (x1[8*s+:8]),
              .w_hi(w1[8*((2*i+1)*SIMD+s)+:8]),
              .w_lo(w1[8*(2*i*SIMD+s)+:8]),
              .p_hi(prod2[16*((2*i+1)*SIMD+s)+:16]),
              .p_lo(prod2[16*(2*i*SIMD+s)+:16])
          );
        end
      end
      if (PE % 2 == 1) begin : g_odd  // the last lane alone
        logic [SIMD*16-1:0] podd;
        always_ff @(posedge clk) begin
          if (en)
            for (int s = 0; s < SIMD; s++)
              podd[16*s+:16] <= signed'(x1[8*s+:8]) * signed'(w1[8*((PE-1)*SIMD+s)+:8]);
        end
        assign prod2[16*(PE-1)*SIMD+:16*SIMD] = podd;
      end
    end else if (PACK == 0) begin : g_lut
      // every product in the fabric: one lut_mul per (output lane, input lane)
      for (genvar p = 0; p < PE; p++) begin : g_p
        for (genvar s = 0; s < SIMD; s++) begin : g_s
          lut_mul m (
              .clk(clk),
              .en (en),
              .x  (x1[8*s+:8]),
              .w  (w1[8*(p*SIMD+s)+:8]),
              .p  (prod2[16*(p*SIMD+s)+:16])
          );
        end
      end
    end else begin : g_plain
      always_ff @(posedge clk) begin
        if (en)
          for (int p = 0; p < PE; p++)
            for (int s = 0; s < SIMD; s++)
              prod2[16*(p*SIMD+s)+:16] <= signed'(x1[8*s+:8]) * signed'(w1[8*(p*SIMD+s)+:8]);
      end
    end
  endgenerate

  always_ff @(posedge clk) begin
    if (en) begin
      bias2 <= bmem[nf1];
      first2 <= first1;
      last2 <= last1;
      olast2 <= olast1;
      nf2 <= nf1;
    end
  end

  // ---- stage 2: accumulate -------------------------------------------------------------
  logic signed [31:0] acc[PE];
  logic signed [31:0] acc_next[PE];
  logic [PE*32-1:0] acc3;
  logic [PE*32-1:0] rq3;
  logic v3, olast3;

  always_comb begin
    for (int p = 0; p < PE; p++) begin
      acc_next[p] = first2 ? signed'(bias2[32*p+:32]) : acc[p];
      for (int s = 0; s < SIMD; s++) acc_next[p] = acc_next[p] + 32'(signed'(prod2[16*(p*SIMD+s)+:16]));
    end
  end

  always_ff @(posedge clk) begin
    if (en) begin
      if (v2) for (int p = 0; p < PE; p++) acc[p] <= acc_next[p];
      for (int p = 0; p < PE; p++) acc3[32*p+:32] <= acc_next[p];
      rq3 <= rqmem[nf2];
      olast3 <= olast2;
    end
  end

  // ---- stages 3-4: requantise; output ---------------------------------------------------
  logic v4, v5, olast4, olast5;
  assign en = !v5 || m_axis_tready;

  always_ff @(posedge clk) begin
    if (rst) begin
      v2 <= 1'b0;
      v3 <= 1'b0;
      v4 <= 1'b0;
      v5 <= 1'b0;
    end else if (en) begin
      v2 <= v1;
      v3 <= v2 && last2;
      v4 <= v3;
      v5 <= v4;
    end
  end

  always_ff @(posedge clk) begin
    if (en) begin
      olast4 <= olast3;
      olast5 <= olast4;
    end
  end

  for (genvar p = 0; p < PE; p++) begin : g_rqlane
    rq_lane #(.RQ_LUT(RQ_LUT)) lane (
        .clk(clk),
        .en (en),
        .acc(acc3[32*p+:32]),
        .rq ({8'd0, rq3[32*p+:32], 8'(RQ_ZP), 8'(RQ_LO), 8'(RQ_HI)}),
        .y  (m_axis_tdata[8*p+:8])
    );
  end

  assign m_axis_tvalid = v5;
  assign m_axis_tlast = olast5 && v5;
endmodule
`default_nettype wire
