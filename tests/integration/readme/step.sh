#!/bin/sh
# The README's step.sh, for tests/integration/readme_examples.sh: one step of
# an array job (GPUFLOCK_ARRAY_INDEX says which).
echo "step $GPUFLOCK_ARRAY_INDEX on card $GPUFLOCK_DEVICE"
