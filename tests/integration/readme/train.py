# The README's train.py, for tests/integration/readme_examples.sh: a stand-in
# for a long training run on the card it was given (it sleeps until stopped).
import os
import time

print("training on", os.environ.get("CUDA_VISIBLE_DEVICES"), flush=True)
time.sleep(3600)
