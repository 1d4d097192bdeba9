#!/usr/bin/env bash
#PBS -N xsched-worker
#PBS -l select=1:ncpus=4:mem=15258MB
#PBS -l walltime=01:00:00

exec /opt/venv/bin/python -m xsched.cli worker \
  --scheduler-file /home/alice/.xsched/scheduler-8786.json \
  --nworkers 1 --nthreads 4 --memory-limit 15258MiB \
  --name xsched-worker-"${PBS_JOBID}" \
  --lifetime 3300s --lifetime-stagger 240s
