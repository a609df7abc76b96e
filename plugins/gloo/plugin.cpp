// The gloo strategy plugin, one shared object.
#include "gloo_strategy.hpp"

RAMJET_PLUGIN("gloo", RAMJET_PLUGIN_VERSION, ramjet::strategy<ramjet_gloo::GlooStrategy>("gloo"))
