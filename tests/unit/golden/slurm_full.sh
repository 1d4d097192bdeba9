#!/usr/bin/env bash
#SBATCH -J xsched-worker
#SBATCH -p normal
#SBATCH -A proj42
#SBATCH -N 1
#SBATCH -n 1
#SBATCH --cpus-per-task=8
#SBATCH --mem=30517M
#SBATCH -t 02:00:00
#SBATCH -o /scratch/alice/xsched-logs/xsched-worker-%j.out
#SBATCH -e /scratch/alice/xsched-logs/xsched-worker-%j.err
#SBATCH --gres=gpu:1

module load hdf5

exec /opt/venv/bin/python -m xsched.cli worker \
  --scheduler-file /home/alice/.xsched/scheduler-8786.json \
  --nworkers 2 --nthreads 4 --memory-limit 15258MiB \
  --name xsched-worker-"${SLURM_JOB_ID}" \
  --lifetime 6900s --lifetime-stagger 240s \
  --interface ib0 \
  --local-directory "${TMPDIR}"/xsched \
  --resources GPU=1
