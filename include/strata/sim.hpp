// strata/sim.hpp: the simulated NeuronCore (see docs/simulator.md).
//
//  neuron_core.run(name, body(kernel&)) ─▶ execution (timeline, simulated ps)
//        │ kernel: load/store (DMA queues), matmul/transpose (Tensor), activation (Scalar),
//        │         tensor_tensor/tensor_scalar/reduce (Vector), memset/iota (GpSimd)
//        ▼
//  record_execution(ex, {core, start_ns, correlation_id}) ─▶ device tracks of the session
//
//  framework (docs/framework.md): tensor + eager_ops ─▶ dispatcher ─▶ runtime.load/submit;
//  graph capture ─▶ codegen (one fused kernel) ─▶ one submission
#pragma once

#include "strata/sim/codegen.hpp"
#include "strata/sim/collective_cost.hpp"
#include "strata/sim/collectives.hpp"
#include "strata/sim/communicator.hpp"
#include "strata/sim/core_params.hpp"
#include "strata/sim/cost_model.hpp"
#include "strata/sim/dispatcher.hpp"
#include "strata/sim/dtype.hpp"
#include "strata/sim/eager_ops.hpp"
#include "strata/sim/engine.hpp"
#include "strata/sim/execution.hpp"
#include "strata/sim/graph.hpp"
#include "strata/sim/hbm_tensor.hpp"
#include "strata/sim/kernel.hpp"
#include "strata/sim/neuron_core.hpp"
#include "strata/sim/ops.hpp"
#include "strata/sim/record_execution.hpp"
#include "strata/sim/runtime.hpp"
#include "strata/sim/tensor.hpp"
#include "strata/sim/tile.hpp"
