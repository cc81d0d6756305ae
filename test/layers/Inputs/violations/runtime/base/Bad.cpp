// The runtime's base layer may not include the device layer.
#include "hal/Device.h"
