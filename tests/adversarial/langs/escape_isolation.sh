# class: escape/isolation
# task: escape
# expect: PASSED
# The default image, from Bash: only the loopback interface, no write outside the scratch dirs.
leaks=()
while IFS=: read -r name _; do
  name="${name// /}"
  [[ -n $name && $name != lo && $name != Inter* && $name != face* ]] && leaks+=("interface $name")
done < /proc/net/dev
for p in /opt/rlvr/x /usr/bin/x /x /etc/x; do
  if (: > "$p") 2>/dev/null; then leaks+=("wrote $p"); fi
done
if ((${#leaks[@]})); then echo "${leaks[*]}"; else echo held; fi
