// The stock transforms, one shared object.
#include "cast.hpp"
#include "normalize.hpp"
#include "random_flip.hpp"

RAMJET_PLUGIN("stock_transforms", RAMJET_PLUGIN_VERSION,
              ramjet::transform<stock_transforms::Normalize>("normalize"),
              ramjet::transform<stock_transforms::RandomFlip>("random_flip"),
              ramjet::transform<stock_transforms::Cast>("cast"))
