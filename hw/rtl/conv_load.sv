`default_nettype none
// The conv unit's input load (conv_engine.sv, docs/engine.md "Schedule", step 2): a step's
// FRAMES x RUNS runs of BEATS beats, run r of frame f from FIRST + f*FSTRIDE + r*STRIDE (FIRST
// the beat holding the step's IN_BASE; "Batched frames"), read as spans of CHUNK beats (a
// run's last one the rest), chunk k of every run before chunk k + 1 of any (k outer, then the
// frame, the run inner), so that the first rows of every channel block come in first. Each
// span goes to axi_bursts with the last burst of the one before (all bursts back to back from
// the cycle after `run0`), rready high. A beat is for buffer row `wrow`, the row it would hold
// had the runs been read one after another (run q = f*RUNS + r's beat j at q*BEATS + j);
// `avail` counts the bytes of each run in after every whole round of chunks, `loaded` is high
// from the cycle after the last round's last beat. `run0` (the step's first RUN cycle) starts
// a step, with FIRST, RUNS, FRAMES, BEATS, STRIDE and FSTRIDE valid from it on.
// Cycles: bbgrap_hls/model/engine.py (layer_timing's input and rounds; LOAD_CHUNK = CHUNK).
module conv_load #(
    parameter int DATA_W  = 64,
    parameter int ADDR_W  = 32,
    parameter int BEATS_W = 24,
    parameter int IRW     = 8,    // buffer row address bits
    parameter int CHUNK   = 16    // beats of a span
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 run0,
    input  wire                 run,
    input  wire  [ADDR_W-1:0]   first,
    input  wire  [31:0]         runs,
    input  wire  [BEATS_W-1:0]  beats,
    input  wire  [31:0]         stride,
    input  wire  [15:0]         frames,
    input  wire  [31:0]         fstride,
    output logic [ADDR_W-1:0]   m_axi_araddr,
    output logic [7:0]          m_axi_arlen,
    output logic [2:0]          m_axi_arsize,
    output logic [1:0]          m_axi_arburst,
    output logic                m_axi_arvalid,
    input  wire                 m_axi_arready,
    input  wire                 m_axi_rvalid,
    output logic                m_axi_rready,
    output logic [IRW-1:0]      wrow,
    output logic                loaded,
    output logic [31:0]         avail
);
  localparam int DBW = $clog2(DATA_W / 8);

  logic [IRW-1:0] rbase;
  logic go, ready;
  logic [31:0] rq_r, dt_r;         // run of the span offered next; of the span arriving
  logic [15:0] rq_f, dt_f;         // their frames
  logic [ADDR_W-1:0] rq_fbase;     // first beat address of the offered span's frame
  logic [BEATS_W-1:0] rq_k, dt_k;  // their chunk's first beat in the run
  logic [BEATS_W-1:0] dt_j;        // beat of the arriving span
  logic [ADDR_W-1:0] rq_run;       // first beat address of the offered span's run
  logic rq_more;                   // spans left to offer
  logic [ADDR_W-1:0] cur_run, sp_addr;
  logic [31:0] cur_r;
  logic [15:0] cur_f;
  logic [ADDR_W-1:0] cur_fbase;
  logic [BEATS_W-1:0] cur_k, sp_beats, dt_n;
  assign cur_r = run0 ? '0 : rq_r;
  assign cur_f = run0 ? '0 : rq_f;
  assign cur_k = run0 ? '0 : rq_k;
  assign cur_run = run0 ? first : rq_run;
  assign cur_fbase = run0 ? first : rq_fbase;
  assign sp_addr = cur_run + (ADDR_W'(cur_k) << DBW);
  assign sp_beats = beats - cur_k < BEATS_W'(CHUNK) ? beats - cur_k : BEATS_W'(CHUNK);
  assign dt_n = beats - dt_k < BEATS_W'(CHUNK) ? beats - dt_k : BEATS_W'(CHUNK);
  assign go = run0 || (run && rq_more);
  axi_bursts #(.DATA_W(DATA_W), .ADDR_W(ADDR_W), .BEATS_W(BEATS_W)) u_ar (
      .clk(clk), .rst(rst), .go(go), .addr(sp_addr), .beats(sp_beats),
      .ready(ready), .ax_addr(m_axi_araddr), .ax_len(m_axi_arlen), .ax_size(m_axi_arsize),
      .ax_burst(m_axi_arburst), .ax_valid(m_axi_arvalid), .ax_ready(m_axi_arready));
  assign m_axi_rready = 1'b1;

  always_ff @(posedge clk) begin
    if (rst) begin
      rq_r <= '0;
      rq_f <= '0;
      rq_k <= '0;
      rq_run <= '0;
      rq_fbase <= '0;
      rq_more <= 1'b0;
    end else if (go && ready) begin  // the span (cur_k, cur_f, cur_r) is taken: offer the next
      if (cur_r != runs - 1) begin
        rq_r <= cur_r + 1;
        rq_f <= cur_f;
        rq_k <= cur_k;
        rq_run <= cur_run + ADDR_W'(stride);
        rq_fbase <= cur_fbase;
        rq_more <= 1'b1;
      end else if (cur_f != frames - 1'b1) begin
        rq_r <= '0;
        rq_f <= cur_f + 1'b1;
        rq_k <= cur_k;
        rq_run <= cur_fbase + ADDR_W'(fstride);
        rq_fbase <= cur_fbase + ADDR_W'(fstride);
        rq_more <= 1'b1;
      end else begin
        rq_r <= '0;
        rq_f <= '0;
        rq_k <= cur_k + BEATS_W'(CHUNK);
        rq_run <= first;
        rq_fbase <= first;
        rq_more <= 32'(cur_k) + CHUNK < 32'(beats);
      end
    end
  end

  always_ff @(posedge clk) begin
    if (rst || run0) begin
      loaded <= 1'b0;
      dt_r <= '0;
      dt_f <= '0;
      dt_k <= '0;
      dt_j <= '0;
      wrow <= '0;
      rbase <= '0;
      avail <= '0;
    end else if (m_axi_rvalid) begin
      if (dt_j != dt_n - 1'b1) begin
        dt_j <= dt_j + 1'b1;
        wrow <= wrow + 1'b1;
      end else begin  // the span's last beat
        dt_j <= '0;
        if (dt_r != runs - 1 || dt_f != frames - 1'b1) begin
          if (dt_r != runs - 1) dt_r <= dt_r + 1;
          else begin
            dt_r <= '0;
            dt_f <= dt_f + 1'b1;
          end
          rbase <= rbase + IRW'(beats);
          wrow <= rbase + IRW'(beats) + IRW'(dt_k);
        end else begin  // a whole round (the last: the step's last beat)
          if (32'(dt_k) + 32'(dt_n) == 32'(beats)) loaded <= 1'b1;
          dt_r <= '0;
          dt_f <= '0;
          dt_k <= dt_k + BEATS_W'(CHUNK);
          rbase <= '0;
          wrow <= IRW'(dt_k) + IRW'(CHUNK);
          avail <= avail + (32'(CHUNK) << DBW);
        end
      end
    end
  end
endmodule
`default_nettype wire
