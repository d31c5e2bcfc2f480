# The README's eval.py, for tests/integration/readme_examples.sh: a stand-in
# for an evaluation that runs after train.py.
print("evaluated")
