// bbgrap-hls kernel library: an off-chip-weight convolution computed a band of output rows
// at a time (docs/cost-model.md, "Row bands"; bbgrap_hls.model.band is its cost, the RTL's
// band_split.sv + conv_band.sv the twin).
//
// P is conv2d_offchip's parameter struct (conv2d_offchip.h) plus
//   BANDS  the bands a frame's HO output rows are computed in (BANDS | HO): R = HO/BANDS rows each.
//
// conv2d_offchip stores a whole input frame and a whole output frame (P::ISLOTS and P::OSLOTS
// slots, two each by default). Here a band splitter (band_split) re-emits the input stream
// as BANDS band frames of
// HB = (R - 1)·SH + span(KH, DH) rows each (band b: input rows b·R·SH - PT .. b·R·SH - PT + HB - 1):
// rows above or below the image as padding rows (every lane ZP_IN, conv2d_offchip's padding
// value), rows a band shares with the band before replayed from a buffer of the last
// OV = max(0, HB - R·SH) rows, rows no band reads dropped; then conv2d_offchip on the band's
// geometry (BandView<P>: H = HB, PT = PB = 0, the left and right padding its own) runs
// frames·BANDS frames. Its frame slots hold a band; each weight is read once per band.
//
// Schedule (codegen/schedule.py `kernel_bounds`), per frame:
//   band_split      one loop (II = 1), one iteration per band beat it emits (passed, replayed
//                   or padding) and per input beat it drops: (BANDS·HB + dropped rows)·W·C/SIMD
//                   (bbgrap_hls.model.band.split_beats);
//   conv2d_offchip  BANDS × its bound on the band geometry (schedule.offchip_cycles).
// C simulation runs band_split to the end before the conv (the stream unbounded there); the
// threaded one (bb_dataflow.h) runs both as threads over a stream of BAND_DEPTH beats.
#ifndef BBGRAP_CONV2D_BANDED_H
#define BBGRAP_CONV2D_BANDED_H

#include "conv2d_offchip.h"

namespace bb {

/// The band geometry of a banded off-chip conv P.
template <class P>
struct BandGeom {
  static constexpr int HO = out_len(P::H + P::PT + P::PB, P::KH, P::SH, P::DH);
  static_assert(P::BANDS >= 1 && HO % P::BANDS == 0, "conv_banded: BANDS | HO");
  static_assert(P::C % P::SIMD == 0, "conv_banded: SIMD | C (conv2d_offchip's input)");
  static constexpr int R = HO / P::BANDS;                     // output rows of a band
  static constexpr int HB = (R - 1) * P::SH + span(P::KH, P::DH);  // input rows of a band
  static constexpr int STEP = R * P::SH;                      // input rows from one band to the next
  static constexpr int OV = HB > STEP ? HB - STEP : 0;        // rows a band shares with the one before
  static constexpr int ROWB = P::W * (P::C / P::SIMD);        // beats of an input row
};

/// P on one band: HB input rows, no top or bottom padding (the splitter's padding rows);
/// every other field (W, C, CO, the window, PL, PR, SIMD, PE, OFF, URAM, ISLOTS, OSLOTS, ...)
/// P's, inherited.
template <class P>
struct BandView : P {
  static constexpr int H = BandGeom<P>::HB, PT = 0, PB = 0;
};

/// The band splitter: per frame, band b = 0..BANDS-1, band row j = 0..HB-1, input row
/// r = b·R·SH - PT + j: outside the image a padding row (ZP_IN), a row already received
/// replayed from the overlap buffer (slot r mod OV), else the input rows before r dropped and
/// row r passed (and kept in its slot); after the last band the frame's remaining rows
/// dropped. One pipelined loop a frame, one beat in or out an iteration.
template <class P>
void band_split(Stream<P::SIMD>& in, Stream<P::SIMD>& out, int frames) {
  using G = BandGeom<P>;
  constexpr int OV = G::OV, ROWB = G::ROWB, OVS = OV > 0 ? OV : 1;
  Word<P::SIMD> buf[OVS * ROWB];  // slot k: the last received row r with r mod OV = k
  BB_HLS(AGGREGATE variable = buf compact = bit)
  BB_HLS(BIND_STORAGE variable = buf type = ram_2p)
BB_LOOP(band_frame)
  for (int f = 0; f < frames; ++f) {
    int b = 0, j = 0, i = 0;  // band, band row, beat of the row
    int next = 0;             // the next input row to arrive
  BB_LOOP(band_beat)
    while (b < P::BANDS || next < P::H) {
      BB_PIPELINE(1)
      const bool bands_done = b == P::BANDS;
      const int r = b * G::STEP - P::PT + j;
      const bool pad = !bands_done && (r < 0 || r >= P::H);
      const bool replay = OV > 0 && !bands_done && !pad && r < next;  // (none without overlap)
      const bool drop = bands_done || (!pad && !replay && r > next);
      const int slot = (r >= 0 ? r % OVS : 0) * ROWB + i;
      Beat<P::SIMD> v = {};
      if (drop || !(pad || replay)) v = in.read();  // a dropped beat or row r's (passed)
      if (pad) {
        for (int s = 0; s < P::SIMD; ++s) v.d[s] = static_cast<int8_t>(P::ZP_IN);
      } else if (replay) {
        const Word<P::SIMD> w = buf[slot];
        for (int s = 0; s < P::SIMD; ++s) v.d[s] = w.d[s];
      } else if (!drop && OV > 0) {
        Word<P::SIMD> w;
        for (int s = 0; s < P::SIMD; ++s) w.d[s] = v.d[s];
        buf[slot] = w;
      }
      if (!drop) out.write(v);
      const bool row_end = i == ROWB - 1;
      i = row_end ? 0 : i + 1;
      if (row_end && (drop || !(pad || replay))) ++next;  // an input row fully read
      if (row_end && !drop) {
        if (j == G::HB - 1) {
          j = 0;
          ++b;
        } else {
          ++j;
        }
      }
    }
  }
}

/// Convolution with off-chip weights a band of R = HO/BANDS output rows at a time (see the
/// header): a DATAFLOW region of band_split and conv2d_offchip<BandView<P>> over frames·BANDS
/// band frames, joined by a stream of SIMD-lane beats. Same arguments as conv2d_offchip.
template <class P>
void conv2d_banded(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
                   const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                   const int32_t shift[P::PE][P::CO / P::PE], int frames) {
  using G = BandGeom<P>;
  static_assert(OffchipGeom<BandView<P>>::HO == G::R, "conv_banded: a band's output rows");
  [[maybe_unused]] constexpr int BAND_DEPTH = 2;  // the splitter's registered output and one more
  [[maybe_unused]] constexpr long BAND_BEATS = static_cast<long>(P::BANDS) * G::HB * G::ROWB;
  BB_HLS(DATAFLOW)
  Stream<P::SIMD> band("conv_band");
  BB_HLS(STREAM variable = band depth = BAND_DEPTH)
  BB_FIFO_DEPTH(band, BAND_DEPTH)
  BB_FIFO_BEATS(band, BAND_BEATS, frames)
  BB_DATAFLOW_REGION()  // threaded C simulation: the two processes as threads (bb_dataflow.h)
  BB_PROCESS(band_split<P>(in, band, frames);)
  BB_PROCESS(conv2d_offchip<BandView<P>>(band, out, wddr, bias, mult, shift, frames * P::BANDS);)
}

}  // namespace bb

#endif  // BBGRAP_CONV2D_BANDED_H
