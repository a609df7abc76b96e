// The mpi strategy plugin, one shared object.
#include "mpi_strategy.hpp"

RAMJET_PLUGIN("mpi", RAMJET_PLUGIN_VERSION, ramjet::strategy<ramjet_mpi::MpiStrategy>("mpi"))
