`default_nettype none
// Band splitter (docs/rtl.md, "band_split and conv_band"; model bbgrap_hls/model/band.py): re-emits
// each input frame (H rows of ROWB = W*C/LANES beats, frames counted, tlast ignored) as BANDS band
// frames of HB = (R-1)*SH + KH rows, R = HO/BANDS output rows each, for an off-chip conv that
// then computes a band as a frame. Band b, row j (0..HB-1) is input row r = b*R*SH - PT + j:
//   r < 0 or r >= H     : ROWB padding beats (PAD_VAL in every lane), no input taken;
//   r already received  : replayed from the row buffer (OV rows, slot r mod OV);
//   else                : input rows below r are taken and dropped, then row r passes through
//                         (each beat also written to buffer slot r mod OV).
// After the last band the rows no band reads are dropped (up to H-1) and the next frame starts.
// OV = HB - R*SH (0 with one band): the rows a band shares with the one before.
// One step a cycle (a beat emitted, replayed or dropped); the output is registered: a beat leaves
// the cycle after its input beat or buffer read (SPLIT_DEPTH = 1), held under backpressure.
module band_split #(
    parameter int H       = 6,
    parameter int W       = 6,
    parameter int C       = 4,
    parameter int LANES   = 2,
    parameter int KH      = 3,   // window rows, dilation included
    parameter int SH      = 1,
    parameter int PT      = 1,
    parameter int HO      = 6,
    parameter int BANDS   = 3,
    parameter int PAD_VAL = 0
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 s_axis_tvalid,
    output logic                s_axis_tready,
    input  wire  [LANES*8-1:0]  s_axis_tdata,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire                 s_axis_tlast,  // frames are counted, not marked
    /* verilator lint_on UNUSEDSIGNAL */
    output logic                m_axis_tvalid,
    input  wire                 m_axis_tready,
    output logic [LANES*8-1:0]  m_axis_tdata
);
  localparam int ROWB = W * C / LANES;                // beats per row
  localparam int R = HO / BANDS;                      // output rows per band
  localparam int HB = (R - 1) * SH + KH;              // input rows per band
  localparam int OVR = HB - R * SH;
  localparam int OV = BANDS > 1 && OVR > 0 ? OVR : 0; // rows shared with the previous band
  localparam int OVM = OV > 0 ? OV : 1;
  localparam int KBW = ROWB > 1 ? $clog2(ROWB) : 1;
  localparam int JW = HB > 1 ? $clog2(HB) : 1;
  localparam int BW = $clog2(BANDS + 1);
  localparam int NW = $clog2(H + 1);
  localparam int RWD = $clog2(H + PT + HB + R * SH + 2) + 1;  // signed row index
  localparam int SW_ = OVM > 1 ? $clog2(OVM) : 1;
  localparam int AW = OVM * ROWB > 1 ? $clog2(OVM * ROWB) : 1;

  initial begin
    if (LANES < 1 || C % LANES != 0) $error("band_split: LANES=%0d must divide C=%0d", LANES, C);
    if (BANDS < 1 || HO % BANDS != 0) $error("band_split: BANDS=%0d must divide HO=%0d", BANDS, HO);
    if (HB < 1 || KH < 1 || SH < 1) $error("band_split: bad window (KH=%0d, SH=%0d)", KH, SH);
  end

  // ---- position: band b, band row j, beat k; rows received nxt; the current input row ----------
  logic [BW-1:0] b;                 // band (BANDS: after the last band, dropping the rest)
  logic [JW-1:0] j;
  logic [KBW-1:0] k;
  logic [NW-1:0] nxt;               // input rows received (passed or dropped) this frame
  logic signed [RWD-1:0] row;       // input row of band row j
  logic [SW_-1:0] ws;               // buffer slot of row nxt (nxt mod OV)
  logic tail;
  assign tail = 32'(b) == BANDS;

  // ---- the step: pad, replay, pass or drop --------------------------------------------------------
  logic pad, replay, pass, drop, adv, go, emit, row_end, take, nxt_h;
  always_comb begin
    pad = !tail && (row < 0 || row >= RWD'(H));
    replay = !tail && !pad && row < RWD'(signed'({1'b0, nxt}));
    pass = !tail && !pad && !replay && row == RWD'(signed'({1'b0, nxt}));
    drop = tail || (!pad && !replay && !pass);  // a row below the one wanted (in the tail: nxt < H)
  end
  assign adv = !m_axis_tvalid || m_axis_tready;        // the output register can take a beat
  assign s_axis_tready = drop || (pass && adv);
  assign go = ((pad || replay) && adv) || (s_axis_tready && s_axis_tvalid);
  assign emit = go && !drop;
  assign row_end = go && 32'(k) == ROWB - 1;
  assign take = pass || drop;                          // this step's row is received
  assign nxt_h = 32'(nxt) + (take ? 1 : 0) == H;       // all H rows received at this row's end

  always_ff @(posedge clk) begin
    if (rst) begin
      b <= '0;
      j <= '0;
      k <= '0;
      nxt <= '0;
      row <= -RWD'(PT);
      ws <= '0;
    end else if (go) begin
      k <= row_end ? '0 : k + 1'b1;
      if (row_end) begin
        if (take) begin
          nxt <= nxt + 1'b1;
          ws <= 32'(ws) == OVM - 1 ? '0 : ws + 1'b1;
        end
        if (tail || (!drop && 32'(j) == HB - 1 && 32'(b) == BANDS - 1)) begin
          if (nxt_h) begin  // the frame's last step: the next frame starts
            b <= '0;
            j <= '0;
            nxt <= '0;
            ws <= '0;
            row <= -RWD'(PT);
          end else b <= BW'(BANDS);
        end else if (!drop) begin
          if (32'(j) == HB - 1) begin  // next band
            j <= '0;
            b <= b + 1'b1;
            row <= row + RWD'(R * SH - HB + 1);
          end else begin
            j <= j + 1'b1;
            row <= row + 1'b1;
          end
        end
      end
    end
  end

  // ---- row buffer and output register -------------------------------------------------------------
  logic [LANES*8-1:0] dreg;
  always_ff @(posedge clk) begin
    if (emit) dreg <= pad ? {LANES{8'(PAD_VAL)}} : s_axis_tdata;
  end
  always_ff @(posedge clk) begin
    if (rst) m_axis_tvalid <= 1'b0;
    else if (emit) m_axis_tvalid <= 1'b1;
    else if (m_axis_tready) m_axis_tvalid <= 1'b0;
  end

  generate
    if (OV > 0) begin : g_buf
      logic [LANES*8-1:0] mem[OV*ROWB];
      logic [LANES*8-1:0] bufq;
      logic sel;  // the beat in the output register is the buffer read
      logic [SW_-1:0] rs;  // slot of the replayed row: (nxt - d) mod OV, d = nxt - row in 1..OV
      always_comb begin
        int d;
        d = 32'(nxt) - 32'(row);
        rs = 32'(ws) >= d ? SW_'(32'(ws) - d) : SW_'(32'(ws) + OV - d);
      end
      always_ff @(posedge clk) begin
        if (go && pass) mem[AW'(32'(ws) * ROWB + 32'(k))] <= s_axis_tdata;
        if (emit && replay) bufq <= mem[AW'(32'(rs) * ROWB + 32'(k))];
        if (emit) sel <= replay;
      end
      assign m_axis_tdata = sel ? bufq : dreg;
    end else begin : g_nobuf
      assign m_axis_tdata = dreg;
    end
  endgenerate
endmodule
`default_nettype wire
