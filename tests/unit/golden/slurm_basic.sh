#!/usr/bin/env bash
#SBATCH -J xsched-worker
#SBATCH -N 1
#SBATCH -n 1
#SBATCH --cpus-per-task=4
#SBATCH --mem=15258M
#SBATCH -t 01:00:00

exec /opt/venv/bin/python -m xsched.cli worker \
  --scheduler-file /home/alice/.xsched/scheduler-8786.json \
  --nworkers 1 --nthreads 4 --memory-limit 15258MiB \
  --name xsched-worker-"${SLURM_JOB_ID}" \
  --lifetime 3300s --lifetime-stagger 240s
