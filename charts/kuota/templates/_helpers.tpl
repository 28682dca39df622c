{{/*
Prefix of every object name, as Kueue's chart computes it: fullnameOverride, else the release
name when it contains "kueue", else "<release>-kueue"; at most 63 characters.
*/}}
{{- define "kueue.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default "kueue" .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Selector labels: what Kueue's Services and Deployment select on. */}}
{{- define "kueue.selectorLabels" -}}
app.kubernetes.io/name: {{ default "kueue" .Values.nameOverride }}
app.kubernetes.io/instance: {{ .Release.Name }}
control-plane: controller-manager
{{- end -}}

{{/* Labels of every object. */}}
{{- define "kueue.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{ include "kueue.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The --feature-gates value: name=enabled for each entry of controllerManager.featureGates. */}}
{{- define "kueue.featureGates" -}}
{{- $gates := list -}}
{{- range .Values.controllerManager.featureGates -}}
{{- $gates = append $gates (printf "%s=%t" .name .enabled) -}}
{{- end -}}
{{- join "," $gates -}}
{{- end -}}

{{/*
The manager's Configuration: managerConfig.controllerManagerConfigYaml (or, as the source
document writes it, controllerManager.managerConfig.controllerManagerConfigYaml), with
internalCertManagement filled in as Kueue's chart does when the file leaves it out.
*/}}
{{- define "kueue.managerConfig" -}}
{{- $yaml := .Values.managerConfig.controllerManagerConfigYaml -}}
{{- with .Values.controllerManager.managerConfig -}}
{{- if .controllerManagerConfigYaml -}}
{{- $yaml = .controllerManagerConfigYaml -}}
{{- end -}}
{{- end -}}
{{- $config := fromYaml $yaml -}}
{{- if hasKey $config "Error" -}}
{{- fail (printf "managerConfig.controllerManagerConfigYaml is not YAML: %s" (get $config "Error")) -}}
{{- end -}}
{{- if not (hasKey $config "internalCertManagement") -}}
{{- if .Values.enableCertManager -}}
{{- $_ := set $config "internalCertManagement" (dict "enable" false) -}}
{{- else -}}
{{- $_ := set $config "internalCertManagement" (dict "enable" true "webhookServiceName" (printf "%s-webhook-service" (include "kueue.fullname" .)) "webhookSecretName" (printf "%s-webhook-server-cert" (include "kueue.fullname" .))) -}}
{{- end -}}
{{- end -}}
{{- toYaml $config -}}
{{- end -}}

{{/* Kuota's log filter for Kueue's logLevel (zap verbosity): debug from 5 up, info below. */}}
{{- define "kueue.logFilter" -}}
{{- if ge (int .Values.controllerManager.manager.logLevel) 5 -}}debug{{- else -}}info{{- end -}}
{{- end -}}

{{/*
"true" unless controllerManager.featureGates turns VisibilityOnDemand off: the visibility API's
Service and APIServices exist only while something serves them, so that turning the gate off
leaves no APIService behind to break discovery and namespace deletion.
*/}}
{{- define "kueue.visibilityOn" -}}
{{- $on := true -}}
{{- range .Values.controllerManager.featureGates -}}
{{- if and (eq .name "VisibilityOnDemand") (not .enabled) -}}
{{- $on = false -}}
{{- end -}}
{{- end -}}
{{- if $on -}}true{{- end -}}
{{- end -}}
