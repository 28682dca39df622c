#!/usr/bin/env bash
# Removes everything a real node (src/real_node.rs) put on this machine, from its state directory
# DIR: its processes by PID, the containers and shims its containerd started, mounts, network
# namespaces, pod cgroups, the bridge, the iptables rules and the sysctls it changed.
#
# RealNode::stop runs it, and so does the janitor RealNode::start leaves behind, once the test
# process has exited for any reason, so a killed test binary leaves nothing either. Every step
# tolerates what is already gone; running it twice is harmless.
#
#   real-node-teardown.sh DIR
set -u
dir=${1:?usage: real-node-teardown.sh DIR}
[ -f "$dir/node.env" ] || exit 0
# shellcheck source=/dev/null
. "$dir/node.env" # socket, bridge, cni_network, uplink, cgroup_root, kube_proxy, rule_comment, made_dirs

stop_pid() {
  kill -0 "$1" 2>/dev/null || return 0
  kill -TERM "$1" 2>/dev/null
  for _ in $(seq 50); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$1" 2>/dev/null
}

tasks="$dir/containerd/state/io.containerd.runtime.v2.task"
# Read before stopping anything: containerd deletes a task's bundle once its process is gone.
# Shim sockets live under /run/containerd/s, and a killed shim leaves its own; the network
# namespaces are those the CRI made for our sandboxes (named in their specs and the metadata).
task_ids=$(ls "$tasks"/k8s.io 2>/dev/null)
shim_sockets=$(for f in "$tasks"/*/*/address; do
  [ -f "$f" ] && { sed 's|^unix://||' "$f"; echo; }
done | sort -u)
netns=$({ cat "$tasks"/*/*/config.json "$dir"/containerd/root/io.containerd.metadata.v1.bolt/meta.db; } 2>/dev/null |
  grep -aoh '/var/run/netns/cni-[0-9a-f-]*' | sort -u)

# kubelet first, so it restarts nothing we are about to remove; then kube-proxy and containerd.
for component in kubelet kube-proxy containerd; do
  [ -f "$dir/$component.log.pid" ] && stop_pid "$(cat "$dir/$component.log.pid")"
done

# Container processes: whatever is left in the node's pod cgroups.
for _ in 1 2 3 4 5; do
  pids=$(cat /sys/fs/cgroup/pids/"$cgroup_root"/cgroup.procs \
    $(find /sys/fs/cgroup/pids/"$cgroup_root" -mindepth 1 -name cgroup.procs 2>/dev/null) 2>/dev/null)
  [ -z "$pids" ] && break
  kill -KILL $pids 2>/dev/null
  sleep 0.2
done

# Shims: they outlive containerd by design; each names our containerd's socket on its command line.
for proc in /proc/[0-9]*; do
  if { tr '\0' ' ' <"$proc/cmdline"; } 2>/dev/null | grep -qF -- "-address $socket "; then
    kill -KILL "${proc#/proc/}" 2>/dev/null
  fi
done
for shim_socket in $shim_sockets; do rm -f "$shim_socket"; done

for ns in $netns; do
  [ -e "$ns" ] && { umount "$ns" 2>/dev/null || umount -l "$ns" 2>/dev/null; rm -f "$ns"; }
done

# Mounts under the state directory (rootfs, shm, volumes), deepest first.
for _ in 1 2 3; do
  mounts=$(awk -v d="$dir/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r)
  [ -z "$mounts" ] && break
  for m in $mounts; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
done

for hierarchy in /sys/fs/cgroup/*; do
  [ -d "$hierarchy/$cgroup_root" ] && find "$hierarchy/$cgroup_root" -depth -type d -exec rmdir {} \; 2>/dev/null
done

ip link delete "$bridge" 2>/dev/null

if [ -n "$uplink" ]; then
  for direction in -i -o; do
    while iptables -t mangle -D FORWARD "$direction" "$uplink" -m comment --comment "$rule_comment" -j DROP 2>/dev/null; do :; done
  done
fi
# kube-proxy removes its own chains; kubelet's canary chains are the only other KUBE- chains.
"$kube_proxy" --cleanup >/dev/null 2>&1
for tool in iptables ip6tables; do
  for table in mangle nat filter; do
    chains=$("$tool" -t "$table" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ {print $2}')
    [ -z "$chains" ] && continue
    # Jumps into those chains from the built-in ones, then the chains themselves.
    "$tool" -t "$table" -S 2>/dev/null | awk '$1 == "-A" && $2 !~ /^KUBE-/ && $(NF-1) == "-j" && $NF ~ /^KUBE-/ {sub(/^-A/, "-D"); print}' |
      while read -r rule; do eval "\"$tool\" -t $table $rule" 2>/dev/null; done
    for chain in $chains; do "$tool" -t "$table" -F "$chain" 2>/dev/null; done
    for chain in $chains; do "$tool" -t "$table" -X "$chain" 2>/dev/null; done
  done
done

# Sysctls back to what they were before the node started (bridge, kubelet and us change some).
while IFS='=' read -r key value; do
  [ -n "$key" ] && sysctl -qw "$key=$value" 2>/dev/null
done <"$dir/sysctls"

# libcni caches each attachment's result under /var/lib/cni whatever containerd's CNI dirs are;
# a pod never deleted keeps its entries: those of our network, and the loopback of our sandboxes.
rm -f /var/lib/cni/results/"$cni_network"-*
for id in $task_ids; do rm -f /var/lib/cni/results/cni-loopback-"$id"-lo; done
# kubelet's device-plugin socket has a fixed path; under the machine lock, ours is the only kubelet.
rm -f /var/lib/kubelet/device-plugins/kubelet.sock

# Log links kubelet made in /var/log/containers point into our state directory.
find /var/log/containers -maxdepth 1 -type l -lname "$dir/*" -delete 2>/dev/null
# Directories outside DIR that did not exist before the node (listed deepest first), if empty.
for made in $made_dirs; do rmdir "$made" 2>/dev/null; done

if ! awk -v d="$dir/" 'index($5, d) == 1 {found = 1} END {exit !found}' /proc/self/mountinfo; then
  rm -rf "$dir"
fi
