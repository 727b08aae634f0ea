// bbgrap-hls kernel library: include everything.
#ifndef BBGRAP_H
#define BBGRAP_H
#include "bb_common.h"
#include "bb_weights.h"
#include "conv2d.h"
#include "conv2d_offchip.h"
#include "conv2d_banded.h"
#include "offchip_stage.h"
#include "ddr_fifo.h"
#include "dwconv2d.h"
#include "eltwise.h"
#include "lrn.h"
#include "pool2d.h"
#include "resample.h"
#include "streams.h"
#endif  // BBGRAP_H
