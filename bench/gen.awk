# Generates the benchmark inventory: N resources over 3 data centers and all
# five kinds, with the attributes each kind has in a real fleet.
#
#   awk -v n=50000 -v out=DIR -f bench/gen.awk
#
# Writes, in DIR:
#   servers.csv   the servers (imported first: VMs name their host by id)
#   others.csv    VMs, storage, switches and InfiniBand devices
#   rows.sql      the same rows as plain INSERTs in one transaction, for the
#                 sqlite3 reference (data-center ids 1..3, server ids 1..S)
#
# Server k (1-based, in file order) becomes resource id k in an empty
# database; run.sh checks that before it imports others.csv. The output is
# the same on every run and every awk: the random numbers come from a
# Park-Miller generator whose products stay exact in a double.
BEGIN {
    if (n == "" || out == "") {
        print "usage: awk -v n=ROWS -v out=DIR -f bench/gen.awk" > "/dev/stderr"
        exit 2
    }
    seed = 20240601
    ndc = 3
    dcname[1] = "fra1"; dcname[2] = "ams2"; dcname[3] = "iad3"

    # The mix of a GPU cloud region: 40% servers, 30% VMs, the rest storage
    # and network gear.
    nserver = int(n * 0.40); nvm = int(n * 0.30); nstorage = int(n * 0.10)
    nswitch = int(n * 0.12); nib = n - nserver - nvm - nstorage - nswitch

    nvendor = split("Supermicro Dell HPE Lenovo Gigabyte", vendor, " ")
    split("SYS-821GE-TNHR PowerEdge-XE9680 ProLiant-XD670 ThinkSystem-SR680a G593-SD0", smodel, " ")
    ngpu = split("H100-SXM5-80GB H200-SXM5-141GB A100-SXM4-80GB L40S MI300X", gpu, " ")
    ncpu = split("Intel-Xeon-Platinum-8480+ AMD-EPYC-9454 AMD-EPYC-9654 Intel-Xeon-Gold-6448Y", cpu, " ")
    ntenant = split("acme-ml vision-lab search-infra speech-rnd llm-pretrain robotics ads-ranking genomics", tenant, " ")
    nproject = split("train-7b train-70b eval batch-infer finetune sweep notebooks", project, " ")
    nimage = split("ubuntu-22.04-cuda12 ubuntu-24.04-cuda12 rocky-9-cuda12 debian-12-rocm6", image, " ")
    nteam = split("platform ml-infra research hpc-ops networking", team, " ")

    hdr = "datacenter,kind,name,state,tenant,project,gpu_model,gpu_count," \
          "hostname,serial,vendor,model,rack,row,position,cpu,cpu_cores,memory_gb,asset_tag," \
          "host_id,vcpu,image,storage_type,capacity_tb,protocol,ports,speed_gbps,mgmt_address," \
          "fabric,device_type,generation,metadata.owner_team,metadata.purchase_order"
    ncol = split(hdr, col, ",")
    for (i = 1; i <= ncol; i++)
        colidx[col[i]] = i

    scsv = out "/servers.csv"; ocsv = out "/others.csv"; sql = out "/rows.sql"
    print hdr > scsv
    print hdr > ocsv
    print "BEGIN;" > sql

    id = 0
    for (i = 1; i <= nserver; i++) {
        dc = (i - 1) % ndc + 1
        sdc[i] = dc
        start("server", dc, sprintf("srv-%s-%05d", dcname[dc], i))
        g = pick(ngpu)
        if (rnd() < 0.08) {
            set("gpu_count", 0)
        } else {
            set("gpu_model", gpu[g]); set("gpu_count", rnd() < 0.8 ? 8 : 4)
        }
        v = pick(nvendor)
        rack = int((i - 1) / ndc / 4) + 1
        set("hostname", sprintf("gpu-%s-r%04d-u%02d.%s.example.net", dcname[dc], rack, int((i - 1) / ndc) % 4 * 8 + 2, dcname[dc]))
        set("serial", sprintf("S%s%08d", substr(vendor[v], 1, 2), i * 7919 % 100000000))
        set("vendor", vendor[v]); set("model", smodel[v])
        set("rack", sprintf("R%04d", rack)); set("row", sprintf("%c", 65 + rack % 20))
        set("position", int((i - 1) / ndc) % 4 * 8 + 2)
        c = pick(ncpu)
        set("cpu", cpu[c]); set("cpu_cores", c % 2 ? 112 : 96)
        set("memory_gb", rnd() < 0.5 ? 2048 : 1024)
        set("asset_tag", sprintf("AT-%07d", 1000000 + i))
        finish(scsv)
    }
    for (i = 1; i <= nvm; i++) {
        h = int(rnd() * nserver) + 1
        dc = sdc[h]
        start("vm", dc, sprintf("vm-%s-%05d", dcname[dc], i))
        if (rnd() < 0.6) {
            set("gpu_model", gpu[pick(ngpu)]); set("gpu_count", rnd() < 0.5 ? 1 : 2)
        }
        set("host_id", h)
        set("hostname", sprintf("vm-%05d.%s.cloud.example.net", i, dcname[dc]))
        set("vcpu", 4 * (pick(8)))
        set("memory_gb", 16 * pick(16))
        set("image", image[pick(nimage)])
        finish(ocsv)
    }
    for (i = 1; i <= nstorage; i++) {
        dc = (i - 1) % ndc + 1
        start("storage", dc, sprintf("sto-%s-%05d", dcname[dc], i))
        t = pick(3)
        set("storage_type", t == 1 ? "block" : t == 2 ? "file" : "object")
        set("capacity_tb", sprintf("%.1f", 50 + rnd() * 950))
        set("protocol", t == 1 ? "NVMe-oF" : t == 2 ? "NFSv4.1" : "S3")
        v = pick(nvendor)
        set("vendor", t == 3 ? "MinIO" : t == 2 ? "VAST" : "Pure Storage")
        set("model", t == 3 ? "AIStor" : t == 2 ? "Ceres" : "FlashArray-X70")
        set("serial", sprintf("ST%08d", i * 104729 % 100000000))
        set("rack", sprintf("S%03d", int((i - 1) / ndc / 10) + 1))
        finish(ocsv)
    }
    for (i = 1; i <= nswitch; i++) {
        dc = (i - 1) % ndc + 1
        start("switch", dc, sprintf("sw-%s-%05d", dcname[dc], i))
        set("vendor", rnd() < 0.5 ? "Arista" : "Cisco")
        set("model", rnd() < 0.5 ? "7060X5-64" : "N9K-C9364D-GX2A")
        set("ports", rnd() < 0.7 ? 64 : 32)
        set("speed_gbps", rnd() < 0.6 ? 400 : 100)
        set("mgmt_address", sprintf("10.%d.%d.%d", dc, int(i / 250) % 250, i % 250 + 1))
        set("serial", sprintf("SW%08d", i * 15485863 % 100000000))
        set("rack", sprintf("N%03d", int((i - 1) / ndc / 40) + 1))
        finish(ocsv)
    }
    for (i = 1; i <= nib; i++) {
        dc = (i - 1) % ndc + 1
        start("infiniband", dc, sprintf("ib-%s-%05d", dcname[dc], i))
        set("fabric", sprintf("%s-ib%d", dcname[dc], i % 4))
        d = pick(5)
        set("device_type", d <= 3 ? "switch" : d == 4 ? "hca" : "gateway")
        set("generation", rnd() < 0.7 ? "NDR" : "HDR")
        set("ports", d == 4 ? 2 : 64)
        set("vendor", "NVIDIA")
        set("model", d == 4 ? "ConnectX-7" : "QM9790")
        set("serial", sprintf("MT%08d", i * 7727 % 100000000))
        set("rack", sprintf("N%03d", int((i - 1) / ndc / 40) + 1))
        finish(ocsv)
    }
    print "COMMIT;" > sql
    close(scsv); close(ocsv); close(sql)
    printf "%d servers, %d vms, %d storage, %d switches, %d infiniband\n", nserver, nvm, nstorage, nswitch, nib
}

function rnd() {
    seed = (seed * 48271) % 2147483647
    return seed / 2147483647
}

# A whole number in 1..k.
function pick(k) { return int(rnd() * k) + 1 }

# Starts a row: kind, data center, name, and a lifecycle state drawn from
# the mix of a busy fleet (tenant and project only while held).
function start(kind, dc, name,    r) {
    delete cell
    cell["datacenter"] = dcname[dc]; cell["kind"] = kind; cell["name"] = name
    rowdc = dc
    r = rnd()
    if (r < 0.35) {
        cell["state"] = "available"
    } else if (r < 0.80) {
        cell["state"] = "in_use"
        cell["tenant"] = tenant[pick(ntenant)]; cell["project"] = project[pick(nproject)]
    } else if (r < 0.85) {
        cell["state"] = "reserved"; cell["tenant"] = tenant[pick(ntenant)]
    } else if (r < 0.95) {
        cell["state"] = "maintenance"
    } else {
        cell["state"] = "retired"
    }
    cell["metadata.owner_team"] = team[pick(nteam)]
    cell["metadata.purchase_order"] = sprintf("PO-%d-%05d", 2021 + pick(4), pick(99999))
}

function set(k, v) { cell[k] = v }

function sqlstr(k) { return (k in cell) ? "'" cell[k] "'" : "NULL" }

# Emits the row as a CSV line to `file` and as an INSERT to rows.sql; the
# attrs JSON is written with sorted keys, numbers unquoted, as the server
# stores it.
function finish(file,    i, line, k, keys, nk, j, t, attrs, sep, isnum) {
    line = ""
    for (i = 1; i <= ncol; i++)
        line = line (i > 1 ? "," : "") ((col[i] in cell) ? cell[col[i]] : "")
    print line > file

    nk = 0
    for (k in cell) {
        if (k ~ /^(datacenter|kind|name|state|tenant|project|gpu_model|gpu_count)$/ || k ~ /^metadata\./)
            continue
        keys[++nk] = k
    }
    for (i = 2; i <= nk; i++)
        for (j = i; j > 1 && keys[j - 1] > keys[j]; j--) {
            t = keys[j]; keys[j] = keys[j - 1]; keys[j - 1] = t
        }
    attrs = "{"; sep = ""
    for (i = 1; i <= nk; i++) {
        isnum = keys[i] ~ /^(position|cpu_cores|memory_gb|host_id|vcpu|capacity_tb|ports|speed_gbps)$/
        attrs = attrs sep "\"" keys[i] "\":" (isnum ? cell[keys[i]] : "\"" cell[keys[i]] "\"")
        sep = ","
    }
    attrs = attrs "}"
    printf "INSERT INTO resources (datacenter_id, kind, name, state, tenant, project, gpu_model, " \
           "gpu_count, attrs, metadata, created_at, updated_at) VALUES (%d, '%s', '%s', '%s', %s, %s, %s, %d, " \
           "'%s', '{\"owner_team\":\"%s\",\"purchase_order\":\"%s\"}', %d, %d);\n",
           rowdc, cell["kind"], cell["name"], cell["state"], sqlstr("tenant"), sqlstr("project"),
           sqlstr("gpu_model"), cell["gpu_count"] + 0, attrs, cell["metadata.owner_team"],
           cell["metadata.purchase_order"], 1717200000, 1717200000 > sql
    delete keys
}
