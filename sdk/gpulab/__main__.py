from gpulab.cli import run

run()
